// Command image builds the odaflow container image without a container
// engine: the odaflow binary is cross-compiled with go build and laid, with
// a CA bundle and a non-root user, into a single-layer image from scratch,
// written as an OCI image layout (a multi-platform index) and, for the first
// platform, a tarball that `docker load`, `podman load`, `kind load
// image-archive` and `crane push` read. With -push the index goes to a
// registry instead (credentials from ~/.docker/config.json, as docker login
// and crane auth login write them).
//
// It is its own Go module, so that go-containerregistry stays out of
// odaflow's dependencies. `make image` runs it:
//
//	cd hack/image && go run . -root ../.. -out ../../bin/image
//
// The image is the Dockerfile's, built the same way: the version from the
// VERSION file (the binary embeds it), OCI labels, user 65532, ENTRYPOINT /odaflow, CMD worker.
// Where the Dockerfile starts from distroless/static, this starts from
// scratch (no registry needed) and adds what distroless gives a static Go
// binary: the CA bundle (system roots for Temporal Cloud, Vault, Keycloak),
// /etc/passwd and /etc/group naming the non-root user, and /tmp.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// nonroot is the user the image runs as: distroless's nonroot, the uid the
// chart's securityContext sets.
const nonroot = 65532

type options struct {
	root      string   // the odaflow repository
	version   string   // the image tag and the version label: the tree's VERSION file
	revision  string   // the git commit, for the revision label
	image     string   // the reference recorded in the tarball and the layout
	out       string   // folder for oci/ and odaflow.tar
	platforms []string // linux/amd64, linux/arm64, ...
	caBundle  string   // PEM file copied to /etc/ssl/certs/ca-certificates.crt
	created   time.Time
	push      bool
}

func main() {
	var o options
	var platforms, created string
	flag.StringVar(&o.root, "root", "../..", "the odaflow repository")
	flag.StringVar(&o.version, "version", "", "the image tag and version label; empty: the tree's VERSION file, which the binary embeds")
	flag.StringVar(&o.revision, "revision", "", "git commit for the org.opencontainers.image.revision label")
	flag.StringVar(&o.image, "image", "ghcr.io/odaflow/odaflow", "image name; tagged with -version (the tarball's and the layout's reference, and where -push pushes)")
	flag.StringVar(&o.out, "out", "../../bin/image", "output folder: oci/ (OCI image layout) and odaflow.tar (first platform); keep it out of git")
	flag.StringVar(&platforms, "platforms", "linux/amd64", "comma-separated os/arch list")
	flag.StringVar(&o.caBundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM CA bundle installed as the image's system roots")
	flag.StringVar(&created, "created", os.Getenv("SOURCE_DATE_EPOCH"), "image creation time as Unix seconds (reproducible builds); empty: now")
	flag.BoolVar(&o.push, "push", false, "push the multi-platform index to <image>:<version> instead of writing files")
	flag.Parse()
	o.platforms = strings.Split(platforms, ",")
	o.created = time.Now().UTC().Truncate(time.Second)
	if created != "" {
		sec, err := strconv.ParseInt(created, 10, 64)
		if err != nil {
			fatal(fmt.Errorf("-created %q: %w", created, err))
		}
		o.created = time.Unix(sec, 0).UTC()
	}
	if o.version == "" {
		v, err := os.ReadFile(filepath.Join(o.root, "VERSION"))
		if err != nil {
			fatal(fmt.Errorf("-version not set and no VERSION file: %w", err))
		}
		o.version = strings.TrimSpace(string(v))
	}
	if err := run(o); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "image:", err)
	os.Exit(1)
}

func run(o options) error {
	ref, err := name.NewTag(o.image + ":" + tagOf(o.version))
	if err != nil {
		return fmt.Errorf("image reference: %w", err)
	}
	ca, err := os.ReadFile(o.caBundle)
	if err != nil {
		return fmt.Errorf("CA bundle (-ca-bundle): %w", err)
	}
	work, err := os.MkdirTemp("", "odaflow-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var first v1.Image
	for _, p := range o.platforms {
		plat, err := v1.ParsePlatform(strings.TrimSpace(p))
		if err != nil {
			return fmt.Errorf("platform %q: %w", p, err)
		}
		bin := filepath.Join(work, "odaflow-"+plat.OS+"-"+plat.Architecture+plat.Variant)
		if err := buildBinary(o, plat, bin); err != nil {
			return err
		}
		img, err := buildImage(o, plat, bin, ca)
		if err != nil {
			return fmt.Errorf("%s: %w", plat, err)
		}
		if first == nil {
			first = img
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: plat},
		})
	}

	if o.push {
		if err := remote.WriteIndex(ref, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
		digest, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("pushed %s@%s\n", ref, digest)
		return nil
	}

	ociDir := filepath.Join(o.out, "oci")
	if err := os.RemoveAll(ociDir); err != nil {
		return err
	}
	lp, err := layout.Write(ociDir, empty.Index)
	if err != nil {
		return fmt.Errorf("OCI layout: %w", err)
	}
	// The ref.name annotation lets skopeo and crane address the index as
	// oci:<dir>:<tag>.
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.TagStr(),
		"io.containerd.image.name":          ref.Name(),
	})); err != nil {
		return fmt.Errorf("OCI layout: %w", err)
	}
	tarPath := filepath.Join(o.out, "odaflow.tar")
	if err := tarball.WriteToFile(tarPath, ref, first); err != nil {
		return fmt.Errorf("tarball: %w", err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s (index %s)\n  OCI layout: %s\n  tarball:    %s (%s)\n", ref, digest, ociDir, tarPath, o.platforms[0])
	return nil
}

// tagOf makes a version a valid tag: git describe's "+" and "/" are not.
func tagOf(version string) string {
	return strings.NewReplacer("+", "-", "/", "-").Replace(version)
}

// buildBinary cross-compiles cmd/odaflow as the Dockerfile does: static,
// trimmed paths (the version is the VERSION file the binary embeds).
func buildBinary(o options, plat *v1.Platform, out string) error {
	cmd := exec.Command("go", "build", "-trimpath",
		"-ldflags", "-s -w",
		"-o", out, "./cmd/odaflow")
	cmd.Dir = o.root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+plat.OS, "GOARCH="+plat.Architecture, "GOFLAGS=-buildvcs=false")
	if plat.Architecture == "arm" && plat.Variant != "" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(plat.Variant, "v"))
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s: %w", plat, err)
	}
	return nil
}

func buildImage(o options, plat *v1.Platform, bin string, ca []byte) (v1.Image, error) {
	binary, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	layerTar, err := rootfs(o.created, binary, ca)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		History:   v1.History{Created: v1.Time{Time: o.created}, CreatedBy: "hack/image: odaflow " + o.version, Comment: "odaflow binary, CA bundle, passwd"},
		MediaType: types.OCILayer,
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Created = v1.Time{Time: o.created}
	cfg.OS, cfg.Architecture, cfg.Variant = plat.OS, plat.Architecture, plat.Variant
	cfg.Config = v1.Config{
		Entrypoint:   []string{"/odaflow"},
		Cmd:          []string{"worker"},
		User:         fmt.Sprintf("%d:%d", nonroot, nonroot),
		WorkingDir:   "/",
		Env:          []string{"PATH=/", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
		Labels:       Labels(o.version, o.revision, o.created),
	}
	return mutate.ConfigFile(img, cfg)
}

// Labels are the OCI annotations the Dockerfile sets too.
func Labels(version, revision string, created time.Time) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "odaflow",
		"org.opencontainers.image.description": "TM Forum ODA Canvas operators on Temporal",
		"org.opencontainers.image.source":      "https://github.com/odaflow/odaflow",
		"org.opencontainers.image.version":     version,
		"org.opencontainers.image.created":     created.Format(time.RFC3339),
	}
	if revision != "" {
		l["org.opencontainers.image.revision"] = revision
	}
	return l
}

// rootfs is the image's only layer, every entry owned by root except the
// non-root user's home, with one fixed modification time.
func rootfs(mtime time.Time, binary, ca []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(path string, mode int64, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: path + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: mtime, Format: tar.FormatPAX})
	}
	file := func(path string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path, Mode: mode, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonroot, nonroot)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", nonroot)
	err := errors.Join(
		dir("etc", 0o755, 0),
		file("etc/passwd", 0o644, []byte(passwd)),
		file("etc/group", 0o644, []byte(group)),
		dir("etc/ssl", 0o755, 0),
		dir("etc/ssl/certs", 0o755, 0),
		file("etc/ssl/certs/ca-certificates.crt", 0o644, ca),
		dir("home", 0o755, 0),
		dir("home/nonroot", 0o700, nonroot),
		dir("tmp", 0o1777, 0),
		file("odaflow", 0o755, binary),
	)
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
