package gateway

import (
	"net"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Ingress is the gateway's ingress Service as exposure needs it: the first
// load-balancer ingress entry and the Service ports.
type Ingress struct {
	IP       string `json:"ip,omitempty"`
	Hostname string `json:"hostname,omitempty"`
	Ports    []Port `json:"ports,omitempty"`
}

// Port is one port of the ingress Service.
type Port struct {
	Name string `json:"name"`
	Port int32  `json:"port"`
}

// APIStatus builds status.apiStatus (§2.2.1 step 7):
// {name, uid, path, port, implementation, url, developerUI?, ip}.
//
//   - The address is cfg.PublicHostname when set, else the ingress IP, else
//     its hostname; it is also "ip".
//   - The URL is <scheme>://<host><suffix><path>, where host is spec.hostname
//     when set and the address otherwise, and suffix is ":<port>" from the
//     first ingress port named http or http2, unless that port is 80 or 443.
//   - developerUI is built the same way when the spec has one.
//   - uid is the ExposedAPI's uid (the Canvas put the VirtualService's there,
//     which nothing reads).
//
// ok is false while there is no address yet (load balancer pending): status
// then has no url, ip or developerUI, and the caller waits durably for the
// ingress to change instead of giving up as the Canvas did (§5.2.3).
func APIStatus(cfg Config, api API, spec Spec, in Ingress) (status map[string]any, ok bool) {
	cfg = cfg.WithDefaults()
	status = map[string]any{
		"name":           api.Name,
		"uid":            api.UID,
		"path":           spec.Path,
		"port":           spec.Port,
		"implementation": spec.Implementation,
	}
	addr := cfg.PublicHostname
	if addr == "" {
		addr = in.IP
	}
	if addr == "" {
		addr = in.Hostname
	}
	if addr == "" {
		return status, false
	}
	host := addr
	if spec.Hostname != "" {
		host = spec.Hostname
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		host = "[" + host + "]" // IPv6 literal
	}
	base := cfg.Scheme + "://" + host + portSuffix(in.Ports)
	status["url"] = base + spec.Path
	status["ip"] = addr
	if spec.DeveloperUI != "" {
		status["developerUI"] = base + spec.DeveloperUI
	}
	return status, true
}

func portSuffix(ports []Port) string {
	for _, p := range ports {
		if p.Name != "http" && p.Name != "http2" {
			continue
		}
		if p.Port == 80 || p.Port == 443 {
			return ""
		}
		return ":" + strconv.Itoa(int(p.Port))
	}
	return ""
}

// Claim is one ExposedAPI's claim on a host and path prefix of the gateway.
type Claim struct {
	Namespace, Name string
	Host, Path      string
	Created         time.Time
}

// ClaimOf is the claim an API makes under cfg: its path on the
// VirtualService host (PublicHostname or "*").
func ClaimOf(cfg Config, api API, spec Spec, created time.Time) Claim {
	host := cfg.PublicHostname
	if host == "" {
		host = "*"
	}
	return Claim{Namespace: api.Namespace, Name: api.Name, Host: host, Path: spec.Path, Created: created}
}

// Conflicting decides between APIs that claim the same host and path prefix
// (a trailing slash and the case of the host do not count). The earliest
// created wins, then the first by namespace and name, so every caller picks
// the same winner whatever the order of others. It returns the winner when
// that is another API, so that me must not be exposed, and nil when nothing
// else claims me's host and path or me wins. Others may include me.
func Conflicting(me Claim, others []Claim) (winner *Claim) {
	key := func(c Claim) string {
		p := c.Path
		if len(p) > 1 {
			p = strings.TrimRight(p, "/")
		}
		return strings.ToLower(c.Host) + " " + p
	}
	if me.Path == "" {
		return nil
	}
	rivals := []Claim{}
	for _, o := range others {
		if o.Namespace == me.Namespace && o.Name == me.Name {
			continue
		}
		if o.Path != "" && key(o) == key(me) {
			rivals = append(rivals, o)
		}
	}
	if len(rivals) == 0 {
		return nil
	}
	sort.Slice(rivals, func(i, j int) bool { return before(rivals[i], rivals[j]) })
	if before(me, rivals[0]) {
		return nil
	}
	w := rivals[0]
	return &w
}

func before(a, b Claim) bool {
	if !a.Created.Equal(b.Created) {
		return a.Created.Before(b.Created)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}
