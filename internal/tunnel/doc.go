// Package tunnel carries the gateway's requests to a pull member through
// its agent, so that no member credential sits on the hub.
//
// The agent opens the tunnel: it dials the gateway over TLS as its hub
// identity and asks to upgrade POST
// /apis/flotilla.io/v1alpha1/memberclusters/NAME/tunnel to Protocol; the
// gateway authorizes that like any request (create on
// memberclusters/tunnel for NAME, which `flotilla join --pull` grants the
// member's agent alone). The connection then carries a yamux session: the
// gateway opens a stream per HTTP connection it needs (Registry.Config
// gives it a rest.Config whose dialer does that) and the agent serves each
// stream as plain HTTP/1.1 with MemberHandler, which lets through only
// what the gateway asks of members and forwards it with the agent's own
// member credentials.
//
// The gateway side is Registry; the agent side is Client and
// MemberHandler.
package tunnel
