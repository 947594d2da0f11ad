module github.com/gocoll/gocoll

go 1.26

require (
	github.com/google/gofuzz v1.2.0 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
