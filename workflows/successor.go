package workflows

// successor collects, for every per-resource workflow, what arrives for a
// newer object once the current lifecycle is over: the latest event of a
// newer uid, and the uid of a newer object seen deleted. Without it, an old
// object's deletion and its replacement's creation delivered together (a
// Component upgrade that removes an API and adds it back within a second)
// would end the workflow and leave the new object without a lifecycle.
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
// went to this run).
func (s *successor) resolve(next *ResourceEvent) *ResourceEvent {
	if s.latest == nil && s.deleted == "" {
		return next
	}
	latest, deleted := s.latest, s.deleted
	s.latest, s.deleted = nil, ""
	if latest != nil {
		next = latest
	}
	if next != nil && next.UID == deleted {
		return nil
	}
	return next
}
