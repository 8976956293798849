package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/odaflow/odaflow/oda"
)

// lifecycleConsole prints one line per lifecycle step of every Component
// and its children, read from the objects' status as a person with kubectl
// would see it: the Component, the child, the phase it reached and how long
// after the Component appeared. A Component's step is its
// deployment_status; a child's is the reason of its Ready condition.
type lifecycleConsole struct {
	console *console
	// now is the clock (tests replace it); started is when the console
	// started watching: objects created before it come from an earlier run.
	now     func() time.Time
	started time.Time

	mu sync.Mutex
	// last is each object's last printed step, by kind/namespace/name.
	last map[string]string
	// firstSeen is when each Component (namespace/name) was first seen.
	firstSeen map[string]time.Time
}

func newLifecycleConsole(c *console) *lifecycleConsole {
	return &lifecycleConsole{console: c, now: time.Now, started: time.Now(), last: map[string]string{}, firstSeen: map[string]time.Time{}}
}

// watch prints steps until ctx ends. It returns once every kind's first
// list has been read, so that what is applied after it is seen from its
// start.
func (l *lifecycleConsole) watch(ctx context.Context, dyn dynamic.Interface) error {
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	for _, kind := range oda.Kinds {
		kind := kind
		inf := factory.ForResource(kind.GVR()).Informer()
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { l.observe(kind, obj, false) },
			UpdateFunc: func(_, obj any) { l.observe(kind, obj, false) },
			DeleteFunc: func(obj any) {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				l.observe(kind, obj, true)
			},
		})
		if err != nil {
			return err
		}
	}
	factory.Start(ctx.Done())
	for gvr, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("watch %s: %w", gvr.Resource, ctx.Err())
		}
	}
	return nil
}

func (l *lifecycleConsole) observe(kind oda.Kind, obj any, deleted bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if line, ok := l.step(kind, u, deleted); ok {
		l.console.Printf("%s\n", line)
	}
}

// step is the line for this state of u, if it is a new step.
func (l *lifecycleConsole) step(kind oda.Kind, u *unstructured.Unstructured, deleted bool) (string, bool) {
	component := u.GetName()
	if kind != oda.KindComponent {
		if component = u.GetLabels()[oda.LabelComponentName]; component == "" {
			return "", false
		}
	}
	phase, detail := stepOf(kind, u)
	if deleted {
		phase, detail = "deleted", ""
	}
	key := kind.Name + "/" + u.GetNamespace() + "/" + u.GetName()
	compKey := u.GetNamespace() + "/" + component
	now := l.now()

	l.mu.Lock()
	defer l.mu.Unlock()
	// The console watches before anything is applied, so a Component (or
	// its first child, which the informers may deliver first) is seen
	// within milliseconds of its creation.
	since, ok := l.firstSeen[compKey]
	if !ok {
		since = now
		l.firstSeen[compKey] = since
	}
	if phase == "" {
		return "", false
	}
	if l.last[key] == phase+detail {
		return "", false
	}
	first := l.last[key] == ""
	l.last[key] = phase + detail
	if deleted {
		delete(l.last, key)
	}
	when := fmt.Sprintf("%6.1fs", now.Sub(since).Seconds())
	if first && u.GetCreationTimestamp().Time.Before(l.started.Add(-time.Second)) {
		// Its whole lifecycle happened in an earlier run.
		when = "(earlier run)"
	}
	if deleted && kind == oda.KindComponent {
		delete(l.firstSeen, compKey) // one applied again starts a new lifecycle
	}
	// A child's name is "<component>-<api>" (or the Component's own, for
	// its IdentityConfig and SecretsManagement): the kind and the api say it.
	child := kind.Name
	if kind != oda.KindComponent && !strings.EqualFold(u.GetName(), component) {
		child += " " + strings.TrimPrefix(u.GetName(), component+"-")
	}
	line := fmt.Sprintf("%-13s %-32s %-42s %s", when, component, child, phase)
	if detail != "" {
		line += "  " + detail
	}
	return line, true
}

// stepOf reads the step an object's status shows, and what a person wants
// next to it: where a ready API answers, or why it is not ready.
func stepOf(kind oda.Kind, u *unstructured.Unstructured) (phase, detail string) {
	if kind == oda.KindComponent {
		phase, _, _ = unstructured.NestedString(u.Object, "status", "summary/status", "deployment_status")
		if phase == oda.StatusFailed {
			if _, reason, message, ok := readyCondition(u.Object); ok {
				detail = reason + ": " + oneLine(message)
			}
		}
		return phase, detail
	}
	status, reason, message, ok := readyCondition(u.Object)
	if !ok {
		return "", ""
	}
	phase = reason
	if status == "True" {
		for _, path := range [][]string{{"status", "apiStatus", "url"}, {"status", "depapiStatus", "url"}} {
			if url, _, _ := unstructured.NestedString(u.Object, path...); url != "" {
				return phase, url
			}
		}
	}
	if m := message; m != "" && m != phase {
		detail = oneLine(m)
	}
	return phase, detail
}
