package main

// benchTools are the subcommands of gocoll bench that work on result
// files rather than run a sweep ("compare", "plot", "model"). Each
// registers itself from its own file, and gocoll bench hands its
// arguments to the one its first argument names.
var benchTools = map[string]*command{}
