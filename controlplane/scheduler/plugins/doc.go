// Package plugins holds the scheduler's filters and scores, one small type
// per file, each named and behaving as its kube-scheduler namesake.
package plugins
