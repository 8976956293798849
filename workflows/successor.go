package workflows

import "go.temporal.io/sdk/workflow"

// changeSuccessorEvents: events of a newer object under the workflow's name
// that arrive once the current lifecycle has handed over (a new uid seen)
// or ended (its object deleted) start, or update, the next lifecycle
// instead of being dropped. Before it, an old object's deletion and its
// replacement's creation delivered together (a Component upgrade that
// removes an API and adds it back within a second) ended the workflow and
// the new ExposedAPI never had a lifecycle: its Component stayed
// In-Progress for good. Runs recorded before it replay on DefaultVersion,
// which drops them.
const changeSuccessorEvents = "successor-events"

// successor collects, for every per-resource workflow, what arrives for a
// newer object once the current lifecycle is over: the latest event of a
// newer uid, and the uid of a newer object seen deleted.
type successor struct {
	latest  *ResourceEvent
	deleted string
}

// observe keeps an event that the current lifecycle (uid current) no
// longer takes. Events of the current object itself (a repeated deletion)
// are nothing to the next one.
func (s *successor) observe(ev ResourceEvent, current string) {
	if ev.UID == current || ev.UID == "" {
		return
	}
	if ev.Deleted {
		s.deleted = ev.UID
		return
	}
	latest := ev
	s.latest = &latest
}

// resolve returns the event the next lifecycle starts from: next (nil when
// there is none yet), replaced by a later event of a newer object, and nil
// when that object is already deleted too (nothing to start: its deletion
// went to this run). It decides the version only when something was
// observed, so histories without such events replay unchanged.
func (s *successor) resolve(ctx workflow.Context, next *ResourceEvent) *ResourceEvent {
	if s.latest == nil && s.deleted == "" {
		return next
	}
	latest, deleted := s.latest, s.deleted
	s.latest, s.deleted = nil, ""
	if !changed(ctx, changeSuccessorEvents) {
		return next
	}
	if latest != nil {
		next = latest
	}
	if next != nil && next.UID == deleted {
		return nil
	}
	return next
}
