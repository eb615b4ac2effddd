// Package webhook is the scheduler plugin that calls an external scheduler
// plugin over HTTP, as configured by a SchedulerPluginWebhook. Profiles
// enable it as "webhook/<name>".
//
// # Protocol
//
// Flotilla POSTs one JSON Request per extension point and decision, carrying
// every candidate cluster (not one request per cluster), to the URL's path
// for that point (spec.paths.filter, .score, .select, .replicas), with
// Content-Type application/json. The request's apiVersion is APIVersion and
// its kind is FilterRequest, ScoreRequest, SelectRequest or
// ReplicasRequest. The webhook answers with a 2xx status and a
// FilterResponse, ScoreResponse, SelectResponse or ReplicasResponse; any
// other status is a failure. Responses are checked strictly:
//
//   - a FilterResponse and a ScoreResponse name every requested cluster
//     exactly once, and scores are from 0 to MaxScore;
//   - a SelectResponse names a subset of the requested clusters; Flotilla
//     keeps them in ranking order; an empty one makes the unit
//     unschedulable, with the response's reason;
//   - a ReplicasResponse names a subset of the requested clusters; for a
//     Divide unit each has replicas ≥ 0 and they sum to unit.replicas.
//
// Unknown fields in responses are ignored, so webhooks may add their own.
// A point given no clusters is answered without a request.
//
// # Failures
//
// Each call is bounded by spec.timeoutSeconds (default 5). A failed call (no
// answer in time, a connection error, a non-2xx status, a body that is not
// the expected JSON or breaks the rules above) fails the decision under
// failurePolicy Fail: the error reads like "filter: POST
// https://ext:8443/filter: context deadline exceeded", and the framework
// prefixes the plugin name ("webhook/ext: ..."). Under failurePolicy Ignore
// the webhook is skipped instead: filter allows every cluster, score gives
// every cluster 0 and select keeps every cluster. Replicas cannot be
// skipped (no placement can be guessed), so a failed replicas call fails
// the decision under either policy. A call abandoned because the caller's
// context ended is never ignored.
//
// # Extension points
//
// *Plugin implements framework.BatchFilterPlugin, BatchScorePlugin,
// SelectPlugin and ReplicasPlugin whatever paths are set, so
// framework.Build accepts a webhook at any point of a profile. Calling a
// point whose path is empty returns an error ("webhook ext has no filter
// path"); validate profiles against Plugin.Points to catch that before
// scheduling.
package webhook
