package member

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func jwt(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(payload)) + ".c2ln"
}

func TestParseTokenClaims(t *testing.T) {
	tests := []struct {
		name  string
		token string
		ok    bool
		sa    string
		life  time.Duration
		renew time.Time
		saOK  bool
	}{
		{"service account token", jwt(`{"sub":"system:serviceaccount:flotilla-system:flotilla-controller","iat":1000,"exp":11000}`), true, "flotilla-system/flotilla-controller", 10000 * time.Second, time.Unix(9000, 0), true},
		{"user token", jwt(`{"sub":"alice","iat":1000,"exp":2000}`), true, "", 1000 * time.Second, time.Unix(1800, 0), false},
		{"no expiry (legacy token)", jwt(`{"sub":"system:serviceaccount:a:b","iat":1000}`), false, "", 0, time.Time{}, false},
		{"expiry before issue", jwt(`{"iat":2000,"exp":1000}`), false, "", 0, time.Time{}, false},
		{"static token", "s3cr3t", false, "", 0, time.Time{}, false},
		{"bad base64", "a.!!!.c", false, "", 0, time.Time{}, false},
		{"bad json", jwt(`{"exp":`), false, "", 0, time.Time{}, false},
		{"subject with extra colon", jwt(`{"sub":"system:serviceaccount:a:b:c","iat":1,"exp":2}`), true, "", time.Second, time.Unix(1, 800_000_000), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := ParseTokenClaims(tt.token)
			if ok != tt.ok {
				t.Fatalf("ParseTokenClaims ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if c.Lifetime() != tt.life || !c.RenewAt(0.8).Equal(tt.renew) {
				t.Errorf("lifetime %s renew at %s, want %s and %s", c.Lifetime(), c.RenewAt(0.8), tt.life, tt.renew)
			}
			ns, name, saOK := c.ServiceAccount()
			if saOK != tt.saOK || (saOK && ns+"/"+name != tt.sa) {
				t.Errorf("ServiceAccount = %s/%s %v, want %q %v", ns, name, saOK, tt.sa, tt.saOK)
			}
		})
	}
}

func TestTokenIsSwappedInPlace(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	tok := NewToken("one")
	c := &http.Client{Transport: tok.WrapTransport(http.DefaultTransport)}
	for _, next := range []string{"two", ""} {
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if next != "" {
			tok.Set(next)
		}
	}
	if len(got) != 2 || got[0] != "Bearer one" || got[1] != "Bearer two" {
		t.Errorf("Authorization headers %q, want Bearer one then Bearer two", got)
	}
}

// FuzzParseTokenClaims: no token, however malformed, panics the parser,
// and what it accepts expires after it was issued.
func FuzzParseTokenClaims(f *testing.F) {
	f.Add(jwt(`{"sub":"system:serviceaccount:a:b","iat":1,"exp":2}`))
	f.Add("x.y.z")
	f.Fuzz(func(t *testing.T, token string) {
		c, ok := ParseTokenClaims(token)
		if ok && !c.Expiry.After(c.IssuedAt) {
			t.Fatalf("accepted claims expiring %s, not after issue %s", c.Expiry, c.IssuedAt)
		}
		c.ServiceAccount()
	})
}
