// Package odecheck holds the checks that the tests of ode and ode/odead
// share: a failure's cause, an ensemble's failed trajectories and an
// error's package prefix. It imports ode, so it is for tests only.
package odecheck
