// Package join registers a member cluster with a Flotilla control plane and
// removes it again: the dedicated namespace, ServiceAccount and RBAC in the
// member, ownership recorded on that namespace, the credentials Secret and
// the MemberCluster in the host. The join and unjoin commands and
// `flotilla up` use it.
package join
