package sample

// Test files are not part of the surface.
func ExportedOnlyInTests() {}
