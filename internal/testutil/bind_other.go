//go:build !linux

package testutil

import "errors"

var errBind = errors.New("binding to a CPU needs Linux")

// bindProcess binds every thread of this process to cpu: Linux only.
func bindProcess(cpu int) (restore func(), err error) { return nil, errBind }
