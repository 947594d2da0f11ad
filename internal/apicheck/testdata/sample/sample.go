// Package sample declares one identifier of every kind that
// apicheck.Exported lists, and unexported ones it must skip.
package sample

import "io"

const Answer, hidden = 42, 0

var Default, other = T{}, 1

type T struct {
	Name  string
	inner int
	io.Reader
	*Embedded
}

type Embedded struct{}

type Doer interface {
	Do() error
	io.Closer
}

type List[E any] []E

func (l List[E]) Len() int { return len(l) }

func (t *T) Method()  {}
func (t *T) private() {}

func (u unexported) Method() {}

type unexported struct{ Field int }

func New() *T { return nil }

func helper() {}

// Alias lists T's fields and methods under its own name.
type Alias = T
