package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImageCarriesTheVersion builds the image for this machine's platform
// and reads both outputs back: the OCI layout's index names the platform
// and the tag, the image runs /odaflow worker as 65532 with the version
// label, and the /odaflow in its layer, run here, prints the version it was
// stamped with.
func TestImageCarriesTheVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the odaflow binary")
	}
	out := t.TempDir()
	const version = "v9.8.7-test"
	plat := "linux/" + runtime.GOARCH
	err := run(options{
		root: "../..", version: version, revision: "abc123", image: "example.test/odaflow",
		out: out, platforms: []string{plat}, caBundle: writeFile(t, "ca.pem", "-----BEGIN CERTIFICATE-----\n"),
		created: time.Unix(1700000000, 0).UTC(),
	})
	if err != nil {
		t.Fatal(err)
	}

	lp, err := layout.FromPath(filepath.Join(out, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	topManifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(topManifest.Manifests) != 1 || topManifest.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != version {
		t.Fatalf("index.json %+v: want one entry tagged %s", topManifest.Manifests, version)
	}
	idx, err := top.ImageIndex(topManifest.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Platform == nil || im.Manifests[0].Platform.String() != plat {
		t.Fatalf("image index %+v: want one %s image", im.Manifests, plat)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	checkImage(t, img, version)

	tarImg, err := tarball.ImageFromPath(filepath.Join(out, "odaflow.tar"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The tarball's manifest is Docker's, the layout's OCI's, so their
	// digests differ; the image ID (the config's digest) is the same.
	id1, _ := img.ConfigName()
	id2, _ := tarImg.ConfigName()
	if id1 != id2 {
		t.Errorf("the tarball holds image %s, the layout %s: want the same image", id2, id1)
	}
}

func checkImage(t *testing.T, img v1.Image, version string) {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if got := strings.Join(c.Entrypoint, " ") + " | " + strings.Join(c.Cmd, " "); got != "/odaflow | worker" {
		t.Errorf("entrypoint | cmd = %q, want /odaflow | worker", got)
	}
	if c.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (the chart's runAsUser)", c.User)
	}
	if c.Labels["org.opencontainers.image.version"] != version || c.Labels["org.opencontainers.image.revision"] != "abc123" {
		t.Errorf("labels %v: want version %s and revision abc123", c.Labels, version)
	}

	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v; want one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]*tar.Header{}
	bin := filepath.Join(t.TempDir(), "odaflow")
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
		if h.Name == "odaflow" {
			f, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	for _, want := range []string{"odaflow", "etc/passwd", "etc/ssl/certs/ca-certificates.crt", "tmp/"} {
		if files[want] == nil {
			t.Errorf("the layer has no %s", want)
		}
	}
	if h := files["tmp/"]; h != nil && h.Mode&0o1777 != 0o1777 {
		t.Errorf("/tmp mode %o, want 1777", h.Mode)
	}
	got, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("/odaflow version: %v", err)
	}
	if strings.TrimSpace(string(got)) != version {
		t.Errorf("/odaflow version printed %q, want %s", got, version)
	}
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
