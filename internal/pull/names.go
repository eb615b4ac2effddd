package pull

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// maxReadable bounds the readable part of an intent's name, leaving room
// for the hash within the 253 characters of an object name.
const maxReadable = 200

// IntentName is the name of the ClusterIntent for the member object of
// resource gr named namespace/name. The readable part (name, namespace
// and resource, lowercased, characters a name cannot hold replaced) is
// for people; the hash of the exact identity keeps distinct objects
// apart. The version is not part of it: a template moving from v1beta1 to
// v1 is the same member object.
func IntentName(gr schema.GroupResource, namespace, name string) string {
	sum := sha256.Sum256([]byte(gr.Group + "/" + gr.Resource + "/" + namespace + "/" + name))
	readable := name
	if namespace != "" {
		readable += "." + namespace
	}
	readable += "." + gr.Resource
	readable = sanitize(readable)
	if len(readable) > maxReadable {
		readable = strings.TrimRight(readable[:maxReadable], ".-")
	}
	if readable == "" {
		readable = "object"
	}
	return readable + "-" + hex.EncodeToString(sum[:5])
}

// sanitize lowercases s and keeps only what a DNS subdomain holds,
// starting and ending with a letter or digit.
func sanitize(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '.' && c != '-' {
			b[i] = '-'
		}
	}
	out := string(b)
	// No empty labels ("..", ".-", "-."): a subdomain's labels start and
	// end with an alphanumeric character.
	for _, bad := range []string{"..", ".-", "-."} {
		for strings.Contains(out, bad) {
			out = strings.ReplaceAll(out, bad, "-")
		}
	}
	return strings.Trim(out, ".-")
}

// named returns the cached intent named as the object's would be, whoever
// holds it.
func (s *Session) named(gr schema.GroupResource, namespace, name string) *intent {
	obj, ok, _ := s.intents.GetStore().GetByKey(s.namespace + "/" + IntentName(gr, namespace, name))
	if !ok {
		return nil
	}
	return &intent{obj.(*unstructured.Unstructured)}
}

// taken says which object holds the intent name of another: the names
// end in 40 bits of a hash, and a name is cut to its first 200 characters,
// so two objects can meet on one only by a collision, by chance or made on
// purpose. The object that holds the name keeps it; the other is refused
// rather than overwrite its intent (and its copy in the member).
func (s *Session) taken(gr schema.GroupResource, namespace, name string) error {
	in := s.named(gr, namespace, name)
	if in == nil || in.isFor(gr, namespace, name) {
		return nil
	}
	other, oname := in.object()
	if other != "" {
		oname = other + "/" + oname
	}
	return fmt.Errorf("%w: the intent name %s/%s is held by the intent of %s %s (the names' hashes collide): rename the object",
		errIntentNameTaken, s.namespace, in.u.GetName(), in.resource().GroupResource(), oname)
}

// errIntentNameTaken: an object's intent name is another object's.
var errIntentNameTaken = errors.New("intent name taken")
