// Package apitypes holds the wire types of the Operator API: the request
// and response bodies internal/api decodes and encodes and
// internal/apiclient sends and reads, so server and client cannot drift
// (nomad's api shape). It imports neither the store nor the engine: store
// records never cross the API edge — the handlers convert them to the
// resources of resources.go — so a schema change is never silently an API
// change.
package apitypes
