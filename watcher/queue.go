package watcher

import (
	"sync"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// newWorkQueue is the watcher's rate-limited workqueue ordered by lanes.
func newWorkQueue(lanes *twoLaneQueue, limiter workqueue.TypedRateLimiter[key], clk clock.WithTicker) workqueue.TypedRateLimitingInterface[key] {
	const name = "odaflow-watcher"
	return workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[key]{
		Name:  name,
		Clock: clk,
		DelayingQueue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[key]{
			Name:  name,
			Clock: clk,
			Queue: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[key]{Name: name, Queue: lanes, Clock: clk}),
		}),
	})
}

// twoLaneQueue is the watcher's workqueue order: keys queued for news (a
// watch event, a change seen while the watcher was down) are served before
// keys queued only to re-check an object odaflow has handled before. After a
// restart with 10,000 Components every object arrives again in the
// informers' initial lists; almost all of them are unchanged and cost a
// hash comparison each, but in one FIFO a Component applied while the
// watcher was down would wait behind all of them.
//
// It implements workqueue.Queue: the workqueue calls Push, Touch, Pop and
// Len under its own lock and keeps its guarantees (an item queued at most
// once, never handed to two workers at a time). The lane of a key is a
// mark set before the key is added; the order never decides whether a key
// is processed, only when.
type twoLaneQueue struct {
	mu      sync.Mutex
	news    []key
	recheck []key
	// lane says where a queued key waits; a key promoted from the recheck
	// lane leaves a stale entry there that Pop skips.
	lane map[key]lane
	// marked keys are pushed to the recheck lane.
	marked map[key]bool
}

type lane uint8

const (
	laneNone lane = iota
	laneNews
	laneRecheck
)

func newTwoLaneQueue() *twoLaneQueue {
	return &twoLaneQueue{lane: map[key]lane{}, marked: map[key]bool{}}
}

// markRecheck asks for k's next push to go to the recheck lane, unless k
// already waits for news.
func (q *twoLaneQueue) markRecheck(k key) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.lane[k] != laneNews {
		q.marked[k] = true
	}
}

// markNews makes k's next push (or, if it waits for a recheck, its touch)
// put it in the news lane.
func (q *twoLaneQueue) markNews(k key) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.marked, k)
}

// Push adds a key that is not queued.
func (q *twoLaneQueue) Push(k key) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.marked[k] {
		q.recheck = append(q.recheck, k)
		q.lane[k] = laneRecheck
		return
	}
	q.news = append(q.news, k)
	q.lane[k] = laneNews
}

// Touch is called when a queued key is added again: news promotes it.
func (q *twoLaneQueue) Touch(k key) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.lane[k] == laneRecheck && !q.marked[k] {
		q.news = append(q.news, k)
		q.lane[k] = laneNews
	}
}

// Len counts the queued keys (not the stale entries).
func (q *twoLaneQueue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.lane)
}

// Pop takes the oldest key waiting for news, else the oldest recheck. The
// workqueue calls it only when Len is above zero.
func (q *twoLaneQueue) Pop() key {
	q.mu.Lock()
	defer q.mu.Unlock()
	if k, ok := q.popFrom(&q.news, laneNews); ok {
		return k
	}
	k, _ := q.popFrom(&q.recheck, laneRecheck)
	return k
}

// popFrom takes the oldest key of a lane that still waits there, dropping
// the stale entries of promoted or taken keys on the way.
func (q *twoLaneQueue) popFrom(entries *[]key, l lane) (key, bool) {
	for len(*entries) > 0 {
		k := (*entries)[0]
		(*entries)[0] = key{}
		*entries = (*entries)[1:]
		if q.lane[k] == l {
			delete(q.lane, k)
			delete(q.marked, k)
			return k, true
		}
	}
	return key{}, false
}
