package selftest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

// cpuByLabel reads a CPU profile as runtime/pprof writes it (gzipped
// profile.proto) and returns the CPU nanoseconds of samples per value of the
// pprof label key ("" for samples without it: the Go runtime's own work such
// as garbage collection and the scheduler). It decodes only what it needs
// of the protobuf: Profile.sample (field 2) with Sample.value (2) and
// Sample.label (3: key 1, str 2), and Profile.string_table (6).
func cpuByLabel(gz []byte, key string) (map[string]int64, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	type sample struct {
		cpu    int64
		labels [][2]int64 // key, str indexes
	}
	var samples []sample
	var strs []string
	err = fields(raw, func(num int, wire int, v uint64, b []byte) error {
		switch {
		case num == 2 && wire == 2:
			var s sample
			err := fields(b, func(num, wire int, v uint64, b []byte) error {
				switch {
				case num == 2 && wire == 2: // packed values: [samples, cpu ns]
					vals, err := packed(b)
					if err != nil {
						return err
					}
					if len(vals) >= 2 {
						s.cpu = int64(vals[1])
					}
				case num == 2 && wire == 0:
					s.cpu = int64(v) // unpacked: the last value wins
				case num == 3 && wire == 2:
					var l [2]int64
					err := fields(b, func(num, wire int, v uint64, _ []byte) error {
						if wire == 0 && (num == 1 || num == 2) {
							l[num-1] = int64(v)
						}
						return nil
					})
					if err != nil {
						return err
					}
					s.labels = append(s.labels, l)
				}
				return nil
			})
			if err != nil {
				return err
			}
			samples = append(samples, s)
		case num == 6 && wire == 2:
			strs = append(strs, string(b))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	out := map[string]int64{}
	for _, s := range samples {
		val := ""
		for _, l := range s.labels {
			if int(l[0]) < len(strs) && strs[l[0]] == key && int(l[1]) < len(strs) {
				val = strs[l[1]]
			}
		}
		out[val] += s.cpu
	}
	return out, nil
}

var errProto = errors.New("malformed protobuf")

// fields calls fn for each field of a protobuf message: varints with v,
// length-delimited fields with b.
func fields(b []byte, fn func(num, wire int, v uint64, b []byte) error) error {
	for len(b) > 0 {
		tag, n := uvarint(b)
		if n <= 0 {
			return errProto
		}
		b = b[n:]
		num, wire := int(tag>>3), int(tag&7)
		switch wire {
		case 0:
			v, n := uvarint(b)
			if n <= 0 {
				return errProto
			}
			b = b[n:]
			if err := fn(num, wire, v, nil); err != nil {
				return err
			}
		case 1:
			if len(b) < 8 {
				return errProto
			}
			b = b[8:]
		case 2:
			l, n := uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return errProto
			}
			if err := fn(num, wire, 0, b[n:n+int(l)]); err != nil {
				return err
			}
			b = b[n+int(l):]
		case 5:
			if len(b) < 4 {
				return errProto
			}
			b = b[4:]
		default:
			return errProto
		}
	}
	return nil
}

func packed(b []byte) ([]uint64, error) {
	var out []uint64
	for len(b) > 0 {
		v, n := uvarint(b)
		if n <= 0 {
			return nil, errProto
		}
		out = append(out, v)
		b = b[n:]
	}
	return out, nil
}

func uvarint(b []byte) (uint64, int) {
	var x uint64
	var s uint
	for i, c := range b {
		if i == 10 {
			return 0, -1
		}
		if c < 0x80 {
			return x | uint64(c)<<s, i + 1
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, 0
}
