package webhook

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Validity of the certificates SelfSigned makes. A development stack or a
// test never outlives them; production certificates come from cert-manager.
const (
	selfSignedCAValidity      = 10 * 365 * 24 * time.Hour
	selfSignedServingValidity = 365 * 24 * time.Hour
	// Backdating absorbs clock skew between the webhook and the apiserver.
	selfSignedBackdate = time.Hour
)

// SelfSigned makes a certificate authority and a serving certificate it
// signed, for tests and `make dev`: certPEM and keyPEM are the webhook's
// serving certificate and key, caPEM is the CA bundle the API server needs
// (spec.conversion.webhook.clientConfig.caBundle, base64 in YAML).
//
// The serving certificate is valid for every name in dnsNames and every
// address in ips (subject alternative names: clients verify those, never the
// common name), with extended key usage serverAuth. At least one name or
// address is required. Keys are ECDSA P-256.
func SelfSigned(dnsNames []string, ips []net.IP) (certPEM, keyPEM, caPEM []byte, err error) {
	if len(dnsNames) == 0 && len(ips) == 0 {
		return nil, nil, nil, errors.New("self-signed certificate: at least one DNS name or IP address is required")
	}
	for _, n := range dnsNames {
		if n == "" {
			return nil, nil, nil, errors.New("self-signed certificate: empty DNS name")
		}
	}
	for _, ip := range ips {
		if ip == nil {
			return nil, nil, nil, errors.New("self-signed certificate: nil IP address")
		}
	}
	now := time.Now()

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("self-signed certificate: CA key: %w", err)
	}
	caSerial, err := serialNumber()
	if err != nil {
		return nil, nil, nil, err
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          caSerial,
		Subject:               pkix.Name{CommonName: "odaflow-webhook-ca", Organization: []string{"odaflow"}},
		NotBefore:             now.Add(-selfSignedBackdate),
		NotAfter:              now.Add(selfSignedCAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		SubjectKeyId:          keyID(caKey.Public()),
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, caKey.Public(), caKey)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("self-signed certificate: CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("self-signed certificate: CA: %w", err)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("self-signed certificate: serving key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, nil, err
	}
	cn := "odaflow-webhook"
	if len(dnsNames) > 0 {
		cn = dnsNames[0]
	}
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"odaflow"}},
		NotBefore:             now.Add(-selfSignedBackdate),
		NotAfter:              now.Add(selfSignedServingValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              append([]string(nil), dnsNames...),
		IPAddresses:           append([]net.IP(nil), ips...),
		SubjectKeyId:          keyID(key.Public()),
		AuthorityKeyId:        ca.SubjectKeyId,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("self-signed certificate: serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("self-signed certificate: encoding the key: %w", err)
	}
	return pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", keyDER), pemBlock("CERTIFICATE", caDER), nil
}

func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("self-signed certificate: serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil // never zero
}

// keyID is the subject key identifier of a public key (RFC 7093 method 1:
// the leftmost 160 bits of its SHA-256).
func keyID(pub crypto.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil
	}
	sum := sha256.Sum256(der)
	return sum[:20]
}

func pemBlock(typ string, der []byte) []byte {
	var b bytes.Buffer
	_ = pem.Encode(&b, &pem.Block{Type: typ, Bytes: der})
	return b.Bytes()
}

// parseKeyPair is tls.X509KeyPair with the leaf parsed and a check that the
// certificate is within its validity period, so that a stale or
// not-yet-valid file is reported when it is loaded instead of as a failed
// handshake in the API server's log.
func parseKeyPair(certPEM, keyPEM []byte, now time.Time) (*tls.Certificate, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("parsing the certificate: %w", err)
		}
		cert.Leaf = leaf
	}
	if now.After(leaf.NotAfter) {
		return nil, fmt.Errorf("certificate %q expired at %s", leaf.Subject.CommonName, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if now.Before(leaf.NotBefore) {
		return nil, fmt.Errorf("certificate %q is not valid before %s", leaf.Subject.CommonName, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	return &cert, nil
}
