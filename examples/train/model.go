package main

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/rand/v2"
)

// dataset is a synthetic classification task: class k's samples are
// scattered with unit Gaussian noise around a centre of its own, drawn
// once. The centres are about 2 apart whatever the number of features,
// so the classes overlap and the loss falls steadily but not to zero.
type dataset struct {
	x        []float32 // samples × features, row-major
	y        []int32
	features int
}

// newDataset draws n samples from seed; every rank draws the same ones.
func newDataset(seed uint64, n, features, classes int) *dataset {
	rng := rand.New(rand.NewPCG(seed, 1))
	spread := 1.5 / math.Sqrt(float64(features))
	centres := make([]float32, classes*features)
	for i := range centres {
		centres[i] = float32(spread * rng.NormFloat64())
	}
	d := &dataset{x: make([]float32, n*features), y: make([]int32, n), features: features}
	for i := range n {
		k := rng.IntN(classes)
		d.y[i] = int32(k)
		for j := range features {
			d.x[i*features+j] = centres[k*features+j] + float32(rng.NormFloat64())
		}
	}
	return d
}

// layer is one fully connected layer, out = w·in + b, with its gradients
// and the activations of the current shard.
type layer struct {
	in, out int
	w, b    []float32 // w is out × in, row-major
	gw, gb  []float32 // the gradients of w and b, the tensors the Bucketer reduces
	a       []float32 // the layer's output for each sample of the shard (tanh, or logits for the last layer)
	dz      []float32 // the loss's gradient with respect to the layer's pre-activation, per sample
}

// mlp is a multi-layer perceptron with tanh hidden layers and a softmax
// cross-entropy output. tanh rather than ReLU keeps the loss smooth in
// the parameters, so that two runs whose gradients differ in their last
// bits stay close (see train_test.go).
type mlp struct {
	layers []*layer
	rows   int       // samples in the shard
	x      []float32 // the shard's inputs, the first layer's input
	y      []int32   // the shard's labels
}

// newMLP initialises the layers of the given sizes (inputs first, classes
// last) with Glorot-uniform weights and zero biases drawn from seed, for
// shards of rows samples.
func newMLP(seed uint64, sizes []int, rows int) *mlp {
	rng := rand.New(rand.NewPCG(seed, 2))
	m := &mlp{rows: rows, x: make([]float32, rows*sizes[0]), y: make([]int32, rows)}
	for l := 1; l < len(sizes); l++ {
		in, out := sizes[l-1], sizes[l]
		ly := &layer{
			in: in, out: out,
			w: make([]float32, out*in), b: make([]float32, out),
			gw: make([]float32, out*in), gb: make([]float32, out),
			a: make([]float32, rows*out), dz: make([]float32, rows*out),
		}
		limit := math.Sqrt(6 / float64(in+out))
		for i := range ly.w {
			ly.w[i] = float32((2*rng.Float64() - 1) * limit)
		}
		m.layers = append(m.layers, ly)
	}
	return m
}

// load copies the samples idx of d into the shard.
func (m *mlp) load(d *dataset, idx []int) {
	f := d.features
	for r, i := range idx {
		copy(m.x[r*f:(r+1)*f], d.x[i*f:(i+1)*f])
		m.y[r] = d.y[i]
	}
}

// forward computes the activations of the shard's samples; the last
// layer's are the logits.
func (m *mlp) forward() {
	in := m.x
	for l, ly := range m.layers {
		last := l == len(m.layers)-1
		for r := range m.rows {
			x := in[r*ly.in : (r+1)*ly.in]
			for o := range ly.out {
				s := ly.b[o]
				for i, w := range ly.w[o*ly.in : (o+1)*ly.in] {
					s += w * x[i]
				}
				if !last {
					s = float32(math.Tanh(float64(s)))
				}
				ly.a[r*ly.out+o] = s
			}
		}
		in = ly.a
	}
}

// loss returns the summed cross-entropy of the shard's samples, and sets the last layer's dz to the gradient of the shard's
// mean loss. The softmax is taken in float64: it is a handful of
// operations per sample, and it keeps the reported loss from depending on
// float32 rounding of exp and log.
func (m *mlp) loss() float64 {
	ly := m.layers[len(m.layers)-1]
	var sum float64
	p := make([]float64, ly.out)
	for r := range m.rows {
		logits := ly.a[r*ly.out : (r+1)*ly.out]
		top := float64(logits[0])
		for _, v := range logits {
			top = max(top, float64(v))
		}
		var z float64
		for o, v := range logits {
			p[o] = math.Exp(float64(v) - top)
			z += p[o]
		}
		sum += math.Log(z) - (float64(logits[m.y[r]]) - top)
		for o := range ly.out {
			g := p[o] / z
			if o == int(m.y[r]) {
				g--
			}
			ly.dz[r*ly.out+o] = float32(g) / float32(m.rows)
		}
	}
	return sum
}

// backward computes the gradients of the shard's mean loss, last layer
// first, and calls ready(l) as soon as layer l's gw and gb are
// final, so that their allreduce can start while the earlier layers'
// gradients are computed.
func (m *mlp) backward(ready func(l int) error) error {
	for l := len(m.layers) - 1; l >= 0; l-- {
		ly := m.layers[l]
		in := m.x
		if l > 0 {
			in = m.layers[l-1].a
		}
		clear(ly.gw)
		clear(ly.gb)
		for r := range m.rows {
			x := in[r*ly.in : (r+1)*ly.in]
			for o, dz := range ly.dz[r*ly.out : (r+1)*ly.out] {
				ly.gb[o] += dz
				gw := ly.gw[o*ly.in : (o+1)*ly.in]
				for i, v := range x {
					gw[i] += dz * v
				}
			}
		}
		if err := ready(l); err != nil {
			return err
		}
		if l == 0 {
			break
		}
		// Through the weights and the previous layer's tanh, whose
		// derivative is 1 - tanh².
		prev := m.layers[l-1]
		for r := range m.rows {
			dz := ly.dz[r*ly.out : (r+1)*ly.out]
			for i := range ly.in {
				var s float32
				for o, d := range dz {
					s += d * ly.w[o*ly.in+i]
				}
				a := prev.a[r*prev.out+i]
				prev.dz[r*prev.out+i] = s * (1 - a*a)
			}
		}
	}
	return nil
}

// step applies plain SGD with the averaged gradients.
func (m *mlp) step(lr float32) {
	for _, ly := range m.layers {
		for i, g := range ly.gw {
			ly.w[i] -= lr * g
		}
		for i, g := range ly.gb {
			ly.b[i] -= lr * g
		}
	}
}

// params returns a copy of every parameter, layer by layer, w before b.
func (m *mlp) params() []float32 {
	var p []float32
	for _, ly := range m.layers {
		p = append(p, ly.w...)
		p = append(p, ly.b...)
	}
	return p
}

// hash is FNV-1a of the parameters' bits: equal on two ranks exactly when
// their parameters are, but for a collision.
func hash(params []float32) uint64 {
	h := fnv.New64a()
	var b [4]byte
	for _, v := range params {
		h.Write(binary.LittleEndian.AppendUint32(b[:0], math.Float32bits(v)))
	}
	return h.Sum64()
}
