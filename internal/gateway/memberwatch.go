package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/flotilla-io/flotilla/internal/membercache"
)

// Watch timing: a watch without timeoutSeconds ends after 30 to 60
// minutes (as kube-apiserver's --min-request-timeout does), so clients
// spread their reconnects; bookmarks go out every minute to watchers
// that allow them.
var (
	defaultWatchTimeout = 30 * time.Minute
	bookmarkEvery       = time.Minute
)

func (h *memberHandler) watch(w http.ResponseWriter, r *http.Request, k *membercache.Kind, filter membercache.Filter, opts metav1.ListOptions, tw tableWriter) {
	send := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	if send && (!opts.AllowWatchBookmarks || opts.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan) {
		h.fail(w, r, apierrors.NewBadRequest("sendInitialEvents needs allowWatchBookmarks=true and resourceVersionMatch=NotOlderThan"))
		return
	}
	watcher, err := h.cache.Watch(k.GroupResource(), membercache.WatchOptions{Filter: filter, RV: opts.ResourceVersion, SendInitialEvents: send})
	switch {
	case errors.Is(err, membercache.ErrExpired):
		h.fail(w, r, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %s (the gateway keeps recent changes only; list again)", opts.ResourceVersion)))
		return
	case err != nil:
		h.fail(w, r, apierrors.NewInternalError(err))
		return
	}
	defer watcher.Stop()
	flusher, ok := w.(http.Flusher)
	if !ok {
		h.fail(w, r, apierrors.NewInternalError(fmt.Errorf("the response cannot stream")))
		return
	}
	timeout := defaultWatchTimeout + time.Duration(rand.Int64N(int64(defaultWatchTimeout)))
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var bookmarks <-chan time.Time
	if opts.AllowWatchBookmarks {
		t := time.NewTicker(bookmarkEvery)
		defer t.Stop()
		bookmarks = t.C
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	enc := eventEncoder{kind: k, tw: tw, bookmarks: opts.AllowWatchBookmarks, cache: h.cache}
	var buf bytes.Buffer
	for _, ev := range watcher.Backlog {
		if err := enc.encode(&buf, ev); err != nil {
			return
		}
		if buf.Len() > 32<<10 {
			if _, err := w.Write(buf.Bytes()); err != nil {
				return
			}
			buf.Reset()
		}
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return
	}
	flusher.Flush()
	// The backlog holds the objects as they were when the watch began: let
	// them go rather than keep them for the watch's half hour or more.
	watcher.Backlog = nil
	for {
		select {
		case <-r.Context().Done():
			return
		case <-deadline.C:
			return
		case <-bookmarks:
			watcher.Bookmark()
		case ev, ok := <-watcher.Events():
			if !ok {
				return
			}
			buf.Reset()
			if err := enc.encode(&buf, ev); err != nil {
				return
			}
			// Send what else is queued in the same write.
			for more := true; more && buf.Len() < 32<<10; {
				select {
				case ev, ok := <-watcher.Events():
					if !ok {
						more = false
						break
					}
					if err := enc.encode(&buf, ev); err != nil {
						return
					}
				default:
					more = false
				}
			}
			if _, err := w.Write(buf.Bytes()); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// eventEncoder writes watch events as kube-apiserver does: one JSON
// object per line, {"type":..., "object":...}.
type eventEncoder struct {
	kind      *membercache.Kind
	tw        tableWriter
	bookmarks bool
	cache     *membercache.Cache
	// headersSent: only a watch's first Table carries the columns.
	headersSent bool
}

func (e *eventEncoder) encode(buf *bytes.Buffer, ev membercache.Event) error {
	var obj []byte
	switch {
	case ev.Type == watch.Bookmark:
		if !e.bookmarks {
			return nil
		}
		m := metav1.ObjectMeta{ResourceVersion: e.cache.FormatRV(ev.RV)}
		if ev.InitialEventsEnd {
			m.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
		}
		b, err := json.Marshal(e.tw.bookmark(m, !e.headersSent))
		if err != nil {
			return err
		}
		if e.tw.format.as == "Table" {
			e.headersSent = true
		}
		obj = b
	case e.tw.format.as == "":
		b, err := e.cache.EventEntry(ev).JSON()
		if err != nil {
			return err
		}
		obj = b
	default:
		b, err := e.tw.render([]*membercache.Entry{e.cache.EventEntry(ev)}, metav1.ListMeta{ResourceVersion: e.cache.FormatRV(ev.RV)}, false, e.headersSent)
		if err != nil {
			return err
		}
		e.headersSent = true
		obj = b
	}
	buf.WriteString(`{"type":"`)
	buf.WriteString(string(ev.Type))
	buf.WriteString(`","object":`)
	buf.Write(obj)
	buf.WriteString("}\n")
	return nil
}
