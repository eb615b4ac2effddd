// Package dispatch writes one desired object into one member cluster and
// reports what happened. It is the only code that writes to members, shared
// by the push controllers and (later) the pull agent.
//
// Objects are written with server-side apply under one field manager, so
// that fields the federation sets win on conflict while fields it does not
// set stay as member-side actors left them. Before writing, the desired
// object is compared with the live one (Contains): an object whose
// federation-set fields already hold the desired values is not written at
// all, so a restart in steady state sends no write to any member.
//
// Member caches keep a projection of each copy instead of the whole object
// (Project): what the controllers read, plus a hash of the fields
// Flotilla's apply entry owns. Apply decides from a projection when the
// hashes match; otherwise it reads the copy once and compares in full.
package dispatch
