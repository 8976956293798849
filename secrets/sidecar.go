package secrets

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// DefaultSidecarImage is the Canvas's sidecar image (SIDECAR_IMAGE).
const DefaultSidecarImage = "tmforumodacanvas/secretsmanagement-sidecar:0.1.0"

// Volume names of the sidecar (§2.6).
const (
	VolumeTmp       = "smansidecar-tmp"
	VolumeKubeToken = "smansidecar-kube-api-access"
)

// SidecarConfig is the installation-wide part of the sidecar.
type SidecarConfig struct {
	Image string `json:"image"`
	// PullPolicy is the image pull policy; the Canvas ignored its setting
	// and always used Always, which stays the default.
	PullPolicy string `json:"pullPolicy"`
	// VaultAddr is the Vault address the sidecar logs in to.
	VaultAddr string `json:"vaultAddr"`
	// VaultSkipVerify is passed to the sidecar as "true" or "false". (The
	// Canvas's own client treated "false" as true, §5.5.1; odaflow parses
	// it as a boolean.)
	VaultSkipVerify bool `json:"vaultSkipVerify"`
	// AuthPath is the Vault auth mount the sidecar logs in through
	// (`auth/<AuthPath>/login {jwt, role}`).
	AuthPath string `json:"authPath"`
}

func (c SidecarConfig) withDefaults() SidecarConfig {
	if c.Image == "" {
		c.Image = DefaultSidecarImage
	}
	if c.PullPolicy == "" {
		c.PullPolicy = string(corev1.PullAlways)
	}
	return c
}

// SidecarContainer is the `smansidecar` container of a SecretsManagement
// (§2.6 step 3), with the Canvas's environment, including its misspelt
// SCRETS_* names, which the sidecar image reads.
func SidecarContainer(n Names, s Spec, cfg SidecarConfig) corev1.Container {
	cfg = cfg.withDefaults()
	port := s.SidecarPort
	if port == 0 {
		port = DefaultSidecarPort
	}
	return corev1.Container{
		Name:            SidecarName,
		Image:           cfg.Image,
		ImagePullPolicy: corev1.PullPolicy(cfg.PullPolicy),
		Ports:           []corev1.ContainerPort{{Name: "smansidecar", ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}},
		Env: []corev1.EnvVar{
			{Name: "SECRETSMANAGEMENT_NAME", Value: n.CIID},
			{Name: "VAULT_ADDR", Value: cfg.VaultAddr},
			{Name: "VAULT_SKIP_VERIFY", Value: strconv.FormatBool(cfg.VaultSkipVerify)},
			{Name: "AUTH_PATH", Value: cfg.AuthPath},
			{Name: "LOGIN_ROLE", Value: n.Role},
			{Name: "SCRETS_MOUNT", Value: n.Mount},
			{Name: "SCRETS_BASE_PATH", Value: BasePath},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: VolumeTmp, MountPath: "/tmp"},
			{Name: VolumeKubeToken, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
		},
		// The restricted Pod Security profile, so the sidecar never makes
		// a pod fail its namespace's admission.
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			RunAsNonRoot:             ptr.To(true),
			ReadOnlyRootFilesystem:   ptr.To(true),
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
}

// SidecarVolumes are the volumes the sidecar mounts: a scratch folder, and
// its own service-account token (projected, 3607 s like the kubelet's) with
// the cluster CA and the pod's namespace and name from the downward API.
func SidecarVolumes() []corev1.Volume {
	return []corev1.Volume{
		{Name: VolumeTmp, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: VolumeKubeToken, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr.To(int32(0o444)),
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To(int64(3607)), Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
					Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
				}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}},
					{Path: "name", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}},
				}}},
			},
		}}},
	}
}

// PatchOp is one JSON Patch (RFC 6902) operation.
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// SidecarPatch is the JSON Patch that adds the sidecar and its volumes to
// pod, or nil when the pod already has a `smansidecar` container (a pod
// re-admitted through reinvocation, or injected by hand). Volumes already
// present under the sidecar's names are kept, not duplicated.
func SidecarPatch(pod *corev1.Pod, n Names, s Spec, cfg SidecarConfig) []PatchOp {
	for _, c := range pod.Spec.Containers {
		if c.Name == SidecarName {
			return nil
		}
	}
	var ops []PatchOp
	if len(pod.Spec.Containers) == 0 {
		ops = append(ops, PatchOp{Op: "add", Path: "/spec/containers", Value: []corev1.Container{SidecarContainer(n, s, cfg)}})
	} else {
		ops = append(ops, PatchOp{Op: "add", Path: "/spec/containers/-", Value: SidecarContainer(n, s, cfg)})
	}
	if pod.Spec.ServiceAccountName == "" {
		// The sidecar's projected token needs a named service account.
		// The ServiceAccount admission plugin sets "default" before
		// webhooks run; where it is off, say so explicitly (selection
		// already read an empty name as "default").
		ops = append(ops, PatchOp{Op: "add", Path: "/spec/serviceAccountName", Value: "default"})
	}
	have := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		have[v.Name] = true
	}
	var add []corev1.Volume
	for _, v := range SidecarVolumes() {
		if !have[v.Name] {
			add = append(add, v)
		}
	}
	switch {
	case len(add) == 0:
	case len(pod.Spec.Volumes) == 0:
		ops = append(ops, PatchOp{Op: "add", Path: "/spec/volumes", Value: add})
	default:
		for _, v := range add {
			ops = append(ops, PatchOp{Op: "add", Path: "/spec/volumes/-", Value: v})
		}
	}
	return ops
}

// PodInfoOf extracts what selection needs from a pod.
func PodInfoOf(pod *corev1.Pod) PodInfo {
	p := PodInfo{
		Namespace: pod.Namespace, Name: pod.Name, GenerateName: pod.GenerateName,
		ServiceAccount: pod.Spec.ServiceAccountName, Labels: pod.Labels,
	}
	for _, c := range pod.Spec.Containers {
		p.Containers = append(p.Containers, c.Name)
	}
	return p
}
