package realserver

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// GGUF v3, as ggml's docs/gguf.md lays it out: a header (magic, version,
// tensor count, metadata count), typed key/value metadata, one descriptor
// per tensor (name, dimensions innermost first, ggml type, offset into the
// data section), padding to the alignment, then the tensor data, each
// tensor starting at a multiple of the alignment. Everything little-endian;
// strings are a uint64 length and the bytes, no terminator.
const (
	ggufMagic     = "GGUF"
	ggufVersion   = 3
	ggufAlignment = 32 // the default when general.alignment is absent
)

// GGUF metadata value types (gguf_metadata_value_type).
const (
	ggufUint32  uint32 = 4
	ggufInt32   uint32 = 5
	ggufFloat32 uint32 = 6
	ggufBool    uint32 = 7
	ggufString  uint32 = 8
	ggufArray   uint32 = 9
	ggufUint64  uint32 = 10
)

// TensorType is a ggml tensor type; only the two this writer produces.
type TensorType uint32

const (
	TensorF32 TensorType = 0
	TensorF16 TensorType = 1
)

// MetaKV is one metadata entry. Value is a string, uint32, int32, float32,
// bool, uint64, []string, []float32 or []int32; the type written follows
// the Go type, so the reader sees exactly the type a key is documented with.
type MetaKV struct {
	Key   string
	Value any
}

// Tensor is one tensor: Dims innermost (contiguous) first, as ggml's ne[]
// and the GGUF descriptor list them; Data holds Dims' product values.
type Tensor struct {
	Name string
	Dims []uint64
	Type TensorType
	Data []float32
}

func (t Tensor) elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

func (t Tensor) byteSize() uint64 {
	if t.Type == TensorF16 {
		return 2 * t.elements()
	}
	return 4 * t.elements()
}

func padding(offset uint64) uint64 {
	return (ggufAlignment - offset%ggufAlignment) % ggufAlignment
}

// WriteGGUF writes a GGUF v3 file. It returns the bytes written.
func WriteGGUF(w io.Writer, meta []MetaKV, tensors []Tensor) (int64, error) {
	for _, t := range tensors {
		if uint64(len(t.Data)) != t.elements() {
			return 0, fmt.Errorf("gguf: tensor %s: %d values for dims %v", t.Name, len(t.Data), t.Dims)
		}
		if t.Type != TensorF32 && t.Type != TensorF16 {
			return 0, fmt.Errorf("gguf: tensor %s: unsupported type %d", t.Name, t.Type)
		}
	}
	gw := &ggufWriter{w: bufio.NewWriterSize(w, 1<<20)}
	gw.raw([]byte(ggufMagic))
	gw.u32(ggufVersion)
	gw.u64(uint64(len(tensors)))
	gw.u64(uint64(len(meta)))
	for _, kv := range meta {
		gw.str(kv.Key)
		gw.value(kv.Key, kv.Value)
	}
	var offset uint64
	for _, t := range tensors {
		gw.str(t.Name)
		gw.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			gw.u64(d)
		}
		gw.u32(uint32(t.Type))
		gw.u64(offset)
		offset += t.byteSize()
		offset += padding(offset)
	}
	gw.zeros(padding(uint64(gw.n)))
	for _, t := range tensors {
		for _, v := range t.Data {
			if t.Type == TensorF16 {
				gw.u16(float16Bits(v))
			} else {
				gw.u32(math.Float32bits(v))
			}
		}
		gw.zeros(padding(t.byteSize()))
	}
	if gw.err == nil {
		gw.err = gw.w.Flush()
	}
	return gw.n, gw.err
}

// ggufWriter keeps the first error, so the layout code above reads as the
// format does.
type ggufWriter struct {
	w   *bufio.Writer
	n   int64
	err error
	buf [8]byte
}

func (g *ggufWriter) raw(b []byte) {
	if g.err != nil {
		return
	}
	n, err := g.w.Write(b)
	g.n += int64(n)
	g.err = err
}

func (g *ggufWriter) u16(v uint16) {
	binary.LittleEndian.PutUint16(g.buf[:2], v)
	g.raw(g.buf[:2])
}

func (g *ggufWriter) u32(v uint32) {
	binary.LittleEndian.PutUint32(g.buf[:4], v)
	g.raw(g.buf[:4])
}

func (g *ggufWriter) u64(v uint64) {
	binary.LittleEndian.PutUint64(g.buf[:8], v)
	g.raw(g.buf[:8])
}

func (g *ggufWriter) str(s string) {
	g.u64(uint64(len(s)))
	g.raw([]byte(s))
}

func (g *ggufWriter) zeros(n uint64) {
	var z [ggufAlignment]byte
	g.raw(z[:n])
}

func (g *ggufWriter) value(key string, v any) {
	switch v := v.(type) {
	case string:
		g.u32(ggufString)
		g.str(v)
	case uint32:
		g.u32(ggufUint32)
		g.u32(v)
	case int32:
		g.u32(ggufInt32)
		g.u32(uint32(v))
	case float32:
		g.u32(ggufFloat32)
		g.u32(math.Float32bits(v))
	case bool:
		g.u32(ggufBool)
		if v {
			g.raw([]byte{1})
		} else {
			g.raw([]byte{0})
		}
	case uint64:
		g.u32(ggufUint64)
		g.u64(v)
	case []string:
		g.u32(ggufArray)
		g.u32(ggufString)
		g.u64(uint64(len(v)))
		for _, s := range v {
			g.str(s)
		}
	case []float32:
		g.u32(ggufArray)
		g.u32(ggufFloat32)
		g.u64(uint64(len(v)))
		for _, f := range v {
			g.u32(math.Float32bits(f))
		}
	case []int32:
		g.u32(ggufArray)
		g.u32(ggufInt32)
		g.u64(uint64(len(v)))
		for _, i := range v {
			g.u32(uint32(i))
		}
	default:
		if g.err == nil {
			g.err = fmt.Errorf("gguf: metadata %s: unsupported value type %T", key, v)
		}
	}
}

// float16Bits converts to IEEE 754 half precision, rounding to nearest even.
// The model's weights are small and finite, so subnormals flush to zero and
// overflow saturates to infinity without further care.
func float16Bits(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case exp <= 0:
		return sign
	case exp >= 31:
		return sign | 0x7c00
	}
	half := uint32(exp)<<10 | mant>>13
	rest := mant & 0x1fff
	if rest > 0x1000 || (rest == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, which is still correct
	}
	return sign | uint16(half)
}
