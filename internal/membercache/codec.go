package membercache

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// codec compresses one kind's cached JSON. Objects of a kind share most
// of their text (field names, defaults, the same images and labels), so
// each is compressed against a dictionary: the first object of the kind
// the cache stores. A pod of a Deployment takes ~0.5 KB instead of ~3 KB.
type codec struct {
	once sync.Once
	err  error
	enc  *zstd.Encoder
	dec  *zstd.Decoder
	// fieldKeys are the kind's field selector labels besides
	// metadata.name and metadata.namespace, in the order an entry packs
	// their values.
	fieldKeys []string
}

// dictID names the raw dictionary in the frames (any value but 0);
// maxDict bounds its size.
const (
	dictID  = 1
	maxDict = 32 << 10
)

func newCodec(k *Kind) *codec {
	c := &codec{}
	if k.fields != nil {
		for f := range k.fields(k.newObject()) {
			c.fieldKeys = append(c.fieldKeys, f)
		}
		sort.Strings(c.fieldKeys)
	}
	return c
}

// init makes the coders with dict, the kind's first JSON.
func (c *codec) init(dict []byte) error {
	c.once.Do(func() {
		// A dictionary longer than the window is no help.
		d := append([]byte(nil), dict[:min(len(dict), maxDict)]...)
		c.enc, c.err = zstd.NewWriter(nil, zstd.WithEncoderDictRaw(dictID, d), zstd.WithEncoderCRC(false),
			zstd.WithSingleSegment(true), zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
		if c.err != nil {
			return
		}
		c.dec, c.err = zstd.NewReader(nil, zstd.WithDecoderDictRaw(dictID, d), zstd.WithDecoderConcurrency(0))
	})
	return c.err
}

func (c *codec) compress(js []byte) ([]byte, error) {
	if err := c.init(js); err != nil {
		return nil, fmt.Errorf("member cache compression: %w", err)
	}
	out := c.enc.EncodeAll(js, nil)
	return out[:len(out):len(out)], nil
}

func (c *codec) decompress(data, buf []byte) ([]byte, error) {
	return c.dec.DecodeAll(data, buf)
}

// packFields joins the values of set in fieldKeys order.
func (c *codec) packFields(set map[string]string) string {
	if len(c.fieldKeys) == 0 {
		return ""
	}
	var b strings.Builder
	for i, k := range c.fieldKeys {
		if i > 0 {
			b.WriteByte(0)
		}
		b.WriteString(set[k])
	}
	return b.String()
}

// field returns the packed value of key.
func (c *codec) field(packed, key string) (string, bool) {
	i := sort.SearchStrings(c.fieldKeys, key)
	if i == len(c.fieldKeys) || c.fieldKeys[i] != key {
		return "", false
	}
	for range i {
		j := strings.IndexByte(packed, 0)
		if j < 0 {
			return "", true
		}
		packed = packed[j+1:]
	}
	if j := strings.IndexByte(packed, 0); j >= 0 {
		packed = packed[:j]
	}
	return packed, true
}

// versionHash stands for a member's resourceVersion: equal versions give
// equal hashes, and a relist compares no more than that.
func versionHash(rv string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(rv))
	return h.Sum64()
}
