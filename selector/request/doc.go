// Package request describes what a job asks of the placement engine: a gang
// of GPUs (G in total, or N nodes x g per node), optionally of given models
// and shares, with CPUs and memory, and a topology tier that must (or
// should) hold the whole gang.
//
// It also parses the user's --gang-topology option,
// TIER[:MODE][,slice=S], and checks a request for internal consistency
// (Validate) before the engine sees it. Whether the request can ever fit a
// particular cluster is the engine's question, not this package's.
package request
