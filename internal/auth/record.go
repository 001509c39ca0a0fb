package auth

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/boomerangd/boomerang/internal/auth/authpb"
	"github.com/boomerangd/boomerang/internal/egress"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// extensionMagic starts a record's signing_secret field when it holds an
// authpb.Extension; anything else there is a signing secret in the clear,
// as records were written before secrets were sealed.
var extensionMagic = []byte("\xffbx1")

// entry is a registered client as Auth holds it: the stored record, and
// what its extension says, the signing secrets open. Entries are replaced,
// never changed in place.
type entry struct {
	rec     *storepb.Client // as stored
	role    Role
	allow   []string // callback rules
	deny    []string
	rules   *egress.Policy   // allow and deny parsed; nil without rules
	secrets []*authpb.Secret // newest first, in the clear
	stale   bool             // its record is to be sealed again (see Reseal)
}

// decodeEntry reads a stored record. stale is true when the record should
// be written again: its secrets are in the clear, or sealed with a key
// other than the first.
func decodeEntry(rec *storepb.Client, keys *keyring) (e *entry, stale bool, err error) {
	e = &entry{rec: rec, role: roleOf(authpb.Role_ROLE_UNSPECIFIED, rec.Admin)}
	raw, found := bytes.CutPrefix(rec.SigningSecret, extensionMagic)
	if !found {
		if len(rec.SigningSecret) > 0 {
			e.secrets = []*authpb.Secret{{Key: slices.Clone(rec.SigningSecret)}}
		}
		return e, true, nil
	}
	var ext authpb.Extension
	if err := proto.Unmarshal(raw, &ext); err != nil {
		return nil, false, fmt.Errorf("auth: client %q: unreadable extension: %w", rec.Id, err)
	}
	e.role = roleOf(ext.Role, rec.Admin)
	e.allow, e.deny = ext.CallbackAllow, ext.CallbackDeny
	if e.rules, err = compileRules(e.allow, e.deny); err != nil {
		return nil, false, fmt.Errorf("auth: client %q: stored callback rules: %w", rec.Id, err)
	}
	if len(ext.SealedSecrets) > 0 {
		plain, err := keys.open(ext.KeyId, ext.Nonce, ext.SealedSecrets, rec.Id)
		if err != nil {
			return nil, false, err
		}
		var s authpb.Secrets
		if err := proto.Unmarshal(plain, &s); err != nil {
			return nil, false, fmt.Errorf("auth: client %q: unreadable secrets: %w", rec.Id, err)
		}
		e.secrets = s.Secrets
		stale = !keys.current(ext.KeyId)
	}
	return e, stale, nil
}

// encode returns the record to store for e, its secrets sealed with the
// first key.
func (e *entry) encode(keys *keyring) *storepb.Client {
	rec := proto.CloneOf(e.rec)
	rec.Admin = e.role == RoleAdmin
	ext := &authpb.Extension{Role: e.role.stored(), CallbackAllow: e.allow, CallbackDeny: e.deny}
	if len(e.secrets) > 0 {
		plain, _ := proto.Marshal(&authpb.Secrets{Secrets: e.secrets}) // cannot fail
		ext.KeyId, ext.Nonce, ext.SealedSecrets = keys.seal(plain, rec.Id)
	}
	raw, _ := proto.Marshal(ext)
	rec.SigningSecret = append(slices.Clone(extensionMagic), raw...)
	return rec
}

// with returns a copy of e for changing.
func (e *entry) with() *entry {
	c := *e
	c.rec = proto.CloneOf(e.rec)
	return &c
}

// liveSecrets returns e's secrets that have not expired at now.
func (e *entry) liveSecrets(now time.Time) []*authpb.Secret {
	out := make([]*authpb.Secret, 0, len(e.secrets))
	for _, s := range e.secrets {
		if s.ExpiresMs == 0 || now.UnixMilli() < s.ExpiresMs {
			out = append(out, s)
		}
	}
	return out
}

func compileRules(allow, deny []string) (*egress.Policy, error) {
	if len(allow) == 0 && len(deny) == 0 {
		return nil, nil
	}
	return egress.New(allow, deny)
}
