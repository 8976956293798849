package main

import (
	"context"
	"fmt"
	"net"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/odaflow/odaflow/webhook"
)

// startConversionWebhook serves the Component conversion webhook on address
// (127.0.0.1:9443) with a self-signed certificate and points the local
// apiserver's Component CRD at it; the returned function undoes both.
func startConversionWebhook(ctx context.Context, cfg *rest.Config, address string) (func(), error) {
	certPEM, keyPEM, caPEM, err := webhook.SelfSigned([]string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		return nil, err
	}
	srv, err := webhook.New(webhook.Config{Address: address, CertPEM: certPEM, KeyPEM: keyPEM})
	if err != nil {
		return nil, err
	}
	if err := srv.Start(); err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	crds := dyn.Resource(crdResource)
	patch := webhook.ConversionURLPatch(fmt.Sprintf("https://%s/convert", srv.Addr()), caPEM)
	if _, err := crds.Patch(ctx, webhook.ComponentCRD, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return nil, fmt.Errorf("point the Component CRD at the webhook: %w", err)
	}
	return func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = crds.Patch(stopCtx, webhook.ComponentCRD, types.MergePatchType, webhook.ConversionNonePatch(), metav1.PatchOptions{})
		_ = srv.Shutdown(stopCtx)
	}, nil
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
