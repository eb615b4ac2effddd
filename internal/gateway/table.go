package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/flotilla-io/flotilla/internal/membercache"
)

// tableWriter renders cached entries as Tables or partial object
// metadata, the representations kubectl and metadata-only clients ask
// for.
type tableWriter struct {
	kind          *membercache.Kind
	format        format
	includeObject metav1.IncludeObjectPolicy
}

func (t tableWriter) typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: "meta.k8s.io/" + t.format.version, Kind: kind}
}

// partial is e's metadata as a PartialObjectMetadata.
func (t tableWriter) partial(e *membercache.Entry) (*metav1.PartialObjectMetadata, error) {
	js, err := e.JSON()
	if err != nil {
		return nil, err
	}
	var obj struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(js, &obj); err != nil {
		return nil, err
	}
	return &metav1.PartialObjectMetadata{TypeMeta: t.typeMeta("PartialObjectMetadata"), ObjectMeta: obj.Metadata}, nil
}

// row is e's Table row: the JSON is read and decoded once for the
// cells and the row's object.
func (t tableWriter) row(e *membercache.Entry, now time.Time) (metav1.TableRow, error) {
	js, err := e.JSON()
	if err != nil {
		return metav1.TableRow{}, err
	}
	obj := t.kind.NewObject()
	if err := json.Unmarshal(js, obj); err != nil {
		return metav1.TableRow{}, fmt.Errorf("decode cached %s %s/%s: %w", t.kind.Kind, e.Namespace, e.Name, err)
	}
	row := metav1.TableRow{Cells: t.kind.Cells(obj, e.Cluster, now)}
	switch t.includeObject {
	case metav1.IncludeObject:
		row.Object = runtime.RawExtension{Raw: js}
	case metav1.IncludeMetadata:
		if m, ok := obj.(metav1.ObjectMetaAccessor); ok {
			if om, ok := m.GetObjectMeta().(*metav1.ObjectMeta); ok {
				row.Object = runtime.RawExtension{Object: &metav1.PartialObjectMetadata{TypeMeta: t.typeMeta("PartialObjectMetadata"), ObjectMeta: *om}}
			}
		}
	}
	return row, nil
}

// bookmark is a watch bookmark carrying m (its resourceVersion, and the
// initial-events-end annotation) in the writer's format, as kube-apiserver
// converts one: the kind's object with only metadata; as partial
// metadata; or a Table of one row (with the columns when headers) whose
// object is as a row's. A client that asked for partial metadata cannot
// decode a bookmark of the kind.
func (t tableWriter) bookmark(m metav1.ObjectMeta, headers bool) any {
	whole := struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
	}{metav1.TypeMeta{Kind: t.kind.Kind, APIVersion: t.kind.Resource.GroupVersion().String()}, m}
	partial := &metav1.PartialObjectMetadata{TypeMeta: t.typeMeta("PartialObjectMetadata"), ObjectMeta: m}
	switch t.format.as {
	case "":
		return whole
	case "Table":
		obj := t.kind.NewObject()
		if a, err := meta.Accessor(obj); err == nil {
			a.SetResourceVersion(m.ResourceVersion)
			a.SetAnnotations(m.Annotations)
		}
		row := metav1.TableRow{Cells: t.kind.Cells(obj, "", time.Now())}
		// kube-apiserver's order (asTable): the whole object when asked
		// for; partial metadata when asked for, by default, and for the
		// bookmark that ends the initial objects; nothing otherwise.
		switch {
		case t.includeObject == metav1.IncludeObject:
			if raw, err := json.Marshal(whole); err == nil {
				row.Object = runtime.RawExtension{Raw: raw}
			}
		case t.includeObject == metav1.IncludeMetadata, t.includeObject == "", m.Annotations[metav1.InitialEventsAnnotationKey] == "true":
			row.Object = runtime.RawExtension{Object: partial}
		}
		tbl := &metav1.Table{TypeMeta: t.typeMeta("Table"), ListMeta: metav1.ListMeta{ResourceVersion: m.ResourceVersion}, Rows: []metav1.TableRow{row}}
		if headers {
			tbl.ColumnDefinitions = t.kind.Columns()
		}
		return tbl
	}
	return partial
}

// table renders entries as one Table (columns unless noHeaders).
func (t tableWriter) table(entries []*membercache.Entry, meta metav1.ListMeta, noHeaders bool) (*metav1.Table, error) {
	tbl := &metav1.Table{TypeMeta: t.typeMeta("Table"), ListMeta: meta, Rows: make([]metav1.TableRow, 0, len(entries))}
	if !noHeaders {
		tbl.ColumnDefinitions = t.kind.Columns()
	}
	now := time.Now()
	for _, e := range entries {
		r, err := t.row(e, now)
		if err != nil {
			return nil, err
		}
		tbl.Rows = append(tbl.Rows, r)
	}
	return tbl, nil
}

// render is entries in the writer's format (a Table or partial metadata);
// for one object (a get or a watch event) list is false.
func (t tableWriter) render(entries []*membercache.Entry, meta metav1.ListMeta, list, noHeaders bool) ([]byte, error) {
	switch t.format.as {
	case "Table":
		tbl, err := t.table(entries, meta, noHeaders)
		if err != nil {
			return nil, err
		}
		return json.Marshal(tbl)
	case "PartialObjectMetadataList":
		list = true
	}
	if !list && len(entries) == 1 {
		p, err := t.partial(entries[0])
		if err != nil {
			return nil, err
		}
		return json.Marshal(p)
	}
	out := &metav1.PartialObjectMetadataList{TypeMeta: t.typeMeta("PartialObjectMetadataList"), ListMeta: meta}
	for _, e := range entries {
		p, err := t.partial(e)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, *p)
	}
	return json.Marshal(out)
}

func (t tableWriter) single(e *membercache.Entry) ([]byte, error) {
	return t.render([]*membercache.Entry{e}, metav1.ListMeta{ResourceVersion: ""}, false, false)
}

func (t tableWriter) list(w io.Writer, res membercache.ListResult) error {
	meta := metav1.ListMeta{ResourceVersion: res.RV, Continue: res.Continue}
	if res.Remaining > 0 {
		meta.RemainingItemCount = &res.Remaining
	}
	b, err := t.render(res.Items, meta, true, false)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
