package gateway

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-io/flotilla/internal/membercache"
)

// TestBookmarkRepresentations: a bookmark in each representation a client
// may ask for, as kube-apiserver converts one (asTable,
// asPartialObjectMetadata): the kind, partial metadata, or a Table whose
// row holds the whole object, partial metadata or nothing as
// includeObject says; the bookmark that ends the initial objects always
// carries its annotation where the client can read it.
func TestBookmarkRepresentations(t *testing.T) {
	ks, err := membercache.ParseKinds([]string{"pods"})
	if err != nil {
		t.Fatal(err)
	}
	end := metav1.ObjectMeta{ResourceVersion: "9", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}
	plain := metav1.ObjectMeta{ResourceVersion: "9"}
	tests := []struct {
		name    string
		as      string
		include metav1.IncludeObjectPolicy
		m       metav1.ObjectMeta
		// want: the kind and apiVersion of the bookmark, and for a Table
		// those of its row's object ("" for none).
		wantKind, wantAPIVersion, wantRowKind string
	}{
		{"objects", "", "", end, "Pod", "v1", ""},
		{"partial metadata", "PartialObjectMetadata", "", end, "PartialObjectMetadata", "meta.k8s.io/v1", ""},
		{"partial metadata list", "PartialObjectMetadataList", "", end, "PartialObjectMetadata", "meta.k8s.io/v1", ""},
		{"table, default", "Table", "", plain, "Table", "meta.k8s.io/v1", "PartialObjectMetadata"},
		{"table, whole objects", "Table", metav1.IncludeObject, end, "Table", "meta.k8s.io/v1", "Pod"},
		{"table, no objects", "Table", metav1.IncludeNone, plain, "Table", "meta.k8s.io/v1", ""},
		{"table, no objects, the end of the initial ones", "Table", metav1.IncludeNone, end, "Table", "meta.k8s.io/v1", "PartialObjectMetadata"},
	}
	for _, tt := range tests {
		tw := tableWriter{kind: ks[0], format: format{as: tt.as, version: "v1"}, includeObject: tt.include}
		b, err := json.Marshal(tw.bookmark(tt.m, true))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var got struct {
			Kind       string            `json:"kind"`
			APIVersion string            `json:"apiVersion"`
			Metadata   metav1.ObjectMeta `json:"metadata"`
			Rows       []struct {
				Object *struct {
					Kind     string            `json:"kind"`
					Metadata metav1.ObjectMeta `json:"metadata"`
				} `json:"object"`
			} `json:"rows"`
			ColumnDefinitions []json.RawMessage `json:"columnDefinitions"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got.Kind != tt.wantKind || got.APIVersion != tt.wantAPIVersion {
			t.Errorf("%s: %s %s, want %s %s", tt.name, got.APIVersion, got.Kind, tt.wantAPIVersion, tt.wantKind)
		}
		if tt.as != "Table" {
			if got.Metadata.ResourceVersion != "9" || got.Metadata.Annotations[metav1.InitialEventsAnnotationKey] != tt.m.Annotations[metav1.InitialEventsAnnotationKey] {
				t.Errorf("%s: metadata %+v", tt.name, got.Metadata)
			}
			continue
		}
		if len(got.Rows) != 1 || len(got.ColumnDefinitions) == 0 {
			t.Fatalf("%s: %d rows, %d columns; want one row and the columns", tt.name, len(got.Rows), len(got.ColumnDefinitions))
		}
		obj := got.Rows[0].Object
		switch {
		case tt.wantRowKind == "" && obj != nil:
			t.Errorf("%s: the row has a %s, want no object", tt.name, obj.Kind)
		case tt.wantRowKind != "" && (obj == nil || obj.Kind != tt.wantRowKind || obj.Metadata.ResourceVersion != "9"):
			t.Errorf("%s: the row's object %+v, want a %s at resourceVersion 9", tt.name, obj, tt.wantRowKind)
		case obj != nil && obj.Metadata.Annotations[metav1.InitialEventsAnnotationKey] != tt.m.Annotations[metav1.InitialEventsAnnotationKey]:
			t.Errorf("%s: the row's annotations %v", tt.name, obj.Metadata.Annotations)
		}
	}
}
