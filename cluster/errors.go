package cluster

import (
	"errors"
	"fmt"

	"github.com/flatkit/flatkit/ode"
)

// RemoteError is an error that happened on a worker, as its message (and,
// for a failed solve, the *ode.Error it wrapped, rebuilt from its fields,
// so that errors.As finds it and the Retcode is the in-process one).
type RemoteError struct {
	Msg   string
	bare  string // Msg without "ode: ", if the worker's error was ode's
	cause error
}

func (e *RemoteError) Error() string { return e.Msg }
func (e *RemoteError) Unwrap() error { return e.cause }

// Unprefixed is the message without "ode: " if the worker's error was one
// of package ode's, so that an ode.TrajectoryError holding it reads as the
// in-process one ("ode: trajectory 3: …", the prefix once); otherwise Msg.
func (e *RemoteError) Unprefixed() string {
	if e.bare != "" {
		return e.bare
	}
	return e.Msg
}

// ShardFailedError is the error of every trajectory of a shard that no
// worker finished: each delivery failed, or the workers it was delivered
// to were lost, MaxDeliver times (or its results were invalid that often).
type ShardFailedError struct {
	Shard      ode.Shard // the shard's range (trajectories, or positions of a gradient's list)
	Number     int       // its index in the request's shard list
	Deliveries int       // deliveries (or publications) it had
	Reason     string    // the last failure seen
}

func (e *ShardFailedError) Error() string {
	return fmt.Sprintf("cluster: shard %d [%d, %d) failed after %d deliveries: %s", e.Number, e.Shard.Lo, e.Shard.Hi, e.Deliveries, e.Reason)
}

// NoWorkerError says that no worker serves a name: nothing answered on the
// name's subject when the request started, or while it stalled.
type NoWorkerError struct {
	Name string
}

func (e *NoWorkerError) Error() string {
	return fmt.Sprintf("cluster: no worker serves %q (start a worker that registers it)", e.Name)
}

// UnknownNameError says that a name is not registered in this process (the
// coordinator builds the ensemble too, to cut and merge its shards).
type UnknownNameError struct {
	Name string
}

func (e *UnknownNameError) Error() string {
	return fmt.Sprintf("cluster: %q is not registered in this process (cluster.Register it)", e.Name)
}

func toWireErr(te ode.TrajectoryError) wireErr {
	w := wireErr{Index: te.Index, Component: -1}
	if te.Err == nil {
		w.Msg = "<nil>"
		return w
	}
	w.Msg = te.Err.Error()
	if u, ok := te.Err.(interface{ Unprefixed() string }); ok && w.Msg == "ode: "+u.Unprefixed() {
		w.Msg, w.Prefixed = u.Unprefixed(), true
	}
	var oe *ode.Error
	if errors.As(te.Err, &oe) {
		w.IsODE = true
		w.Code = int8(oe.Code)
		w.T, w.Dt, w.Component = oe.T, oe.Dt, int32(oe.Component)
		if oe.Err != nil {
			w.HasInner, w.Inner = true, oe.Err.Error()
		}
	}
	if len(w.Msg)+len(w.Inner) > MaxErrorText {
		w.Inner = cutText(w.Inner, min(len(w.Inner), maxInnerText))
		w.Msg = cutText(w.Msg, MaxErrorText-len(w.Inner))
	}
	return w
}

// cutText cuts s to at most n bytes on a rune boundary, ending it with
// ErrorTextCut if it was longer.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return truncUTF8(s, n-len(ErrorTextCut)) + ErrorTextCut
}

func fromWireErr(w wireErr) ode.TrajectoryError {
	re := &RemoteError{Msg: w.Msg}
	if w.Prefixed {
		re.Msg, re.bare = "ode: "+w.Msg, w.Msg
	}
	var err error = re
	if w.IsODE {
		oe := &ode.Error{Code: ode.Retcode(w.Code), T: w.T, Dt: w.Dt, Component: int(w.Component)}
		if w.HasInner {
			oe.Err = &RemoteError{Msg: w.Inner}
		}
		if oe.Error() == re.Msg {
			err = oe
		} else {
			re.cause = oe
		}
	}
	return ode.TrajectoryError{Index: w.Index, Err: err}
}
