// Package multihost tests gocoll across hosts: Docker containers on a
// private network, each a host with its own address, hostname and shared
// memory, running gocoll run --nnodes 2 around the worker command.
//
// The tests build static binaries (CGO_ENABLED=0) of gocoll and the
// worker, an image FROM scratch around them (nothing is pulled), and an
// internal network of their own; everything they create carries the label
// gocoll.test and is removed when they end, pass or fail, and by the next
// run if a killed test binary left it. Where no Docker engine answers, the
// tests skip and say so.
//
// TestMeasure, which kills, freezes and cuts off ranks and hosts many
// times to report how long detection takes, runs only when
// GOCOLL_MEASURE_TRIALS is set; TestMeasureBandwidth, which runs gocoll
// bench across the two hosts against the same sweep over loopback, only
// when GOCOLL_MEASURE_ROUNDS is.
package multihost
