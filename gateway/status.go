package gateway

import (
	"net"
	"path"
	"strconv"
	"strings"
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

// HostnameAllowed tells whether an ExposedAPI's spec.hostname may become
// the host of its URL. The URL is what a dependant calls, so the Canvas
// decides which hosts it may name, not the tenant who writes the spec: no
// hostname (the Canvas's address is used), the Canvas's own address
// (cfg.PublicHostname, the ingress's IP or host name), or a name matching
// one of cfg.AllowedHostnames, compared without case. A glob's * matches
// any run of characters, dots included, so *.example.com admits every name
// under example.com and nothing else. in is nil while the ingress has no
// address.
func HostnameAllowed(cfg Config, in *Ingress, hostname string) bool {
	host := strings.ToLower(strings.TrimSpace(hostname))
	if host == "" {
		return true
	}
	own := []string{cfg.PublicHostname}
	if in != nil {
		own = append(own, in.IP, in.Hostname)
	}
	for _, o := range own {
		if o != "" && strings.EqualFold(o, host) {
			return true
		}
	}
	for _, pattern := range cfg.AllowedHostnames {
		if ok, _ := path.Match(strings.ToLower(pattern), host); ok {
			return true
		}
	}
	return false
}
