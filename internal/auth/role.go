package auth

import (
	"fmt"

	"github.com/boomerangd/boomerang/internal/auth/authpb"
)

// Role is what a client may do.
type Role uint8

const (
	// RoleClient sees and changes its own tasks, dead letters and groups.
	RoleClient Role = iota + 1
	// RoleAdmin sees and changes everything, and manages clients.
	RoleAdmin
	// RoleReadOnly sees what an admin sees and changes nothing: for
	// operators and dashboards.
	RoleReadOnly
)

func (r Role) String() string {
	switch r {
	case RoleClient:
		return "client"
	case RoleAdmin:
		return "admin"
	case RoleReadOnly:
		return "read-only"
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

func (r Role) valid() bool { return r >= RoleClient && r <= RoleReadOnly }

func roleOf(ext authpb.Role, admin bool) Role {
	switch {
	case admin || ext == authpb.Role_ROLE_ADMIN:
		return RoleAdmin
	case ext == authpb.Role_ROLE_READ_ONLY:
		return RoleReadOnly
	}
	return RoleClient
}

func (r Role) stored() authpb.Role { return authpb.Role(r) }

// Principal is who a session speaks for.
type Principal struct {
	Client string
	Role   Role
	// Session is the handle of the session the request came with (see
	// SessionInfo).
	Session string
}

// Admin reports whether p may manage clients and change every client's
// data.
func (p Principal) Admin() bool { return p.Role == RoleAdmin }

// ReadOnly reports whether p may change nothing.
func (p Principal) ReadOnly() bool { return p.Role == RoleReadOnly }

// SeesAll reports whether p may read every client's data.
func (p Principal) SeesAll() bool { return p.Role == RoleAdmin || p.Role == RoleReadOnly }
