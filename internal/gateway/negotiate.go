package gateway

import (
	"mime"
	"strings"
)

// format is how a read of a member kind is answered.
type format struct {
	// as is "" (the objects), "Table", "PartialObjectMetadata" or
	// "PartialObjectMetadataList".
	as string
	// version is the meta.k8s.io version of a Table or partial metadata.
	version string
}

// negotiate picks the first representation of accept the gateway can
// serve for member kinds: JSON objects, Tables or partial object metadata.
// ok is false when accept names none of them (406).
func negotiate(accept string) (format, bool) {
	if strings.TrimSpace(accept) == "" {
		return format{}, true
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "application/json", "application/*", "*/*":
		default:
			continue
		}
		as := params["as"]
		if as == "" {
			return format{}, true
		}
		if params["g"] != "meta.k8s.io" || (params["v"] != "v1" && params["v"] != "v1beta1") {
			continue
		}
		switch as {
		case "Table", "PartialObjectMetadata", "PartialObjectMetadataList":
			return format{as: as, version: params["v"]}, true
		}
	}
	return format{}, false
}
