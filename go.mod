module github.com/gocoll/gocoll

go 1.26.0

require (
	github.com/google/gofuzz v1.2.0
	github.com/klauspost/compress v1.20.3
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.49.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
