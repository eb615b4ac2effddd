// Package agentcert holds the rules of pull agents' client certificates
// (signer flotilla.io/agent), shared by the hub and the agent: the subject
// an agent asks for, the checks a request must pass before the hub signs
// it, the signing itself, and when an agent renews.
package agentcert
