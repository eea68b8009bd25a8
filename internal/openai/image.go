package openai

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"strconv"
	"strings"
)

// ImageFormats are the --image-format values.
var ImageFormats = []string{"png", "jpeg"}

// SyntheticImage draws a w×h image from seed and encodes it as format
// (png or jpeg): a gradient under a dozen random rectangles, so that it
// compresses as a picture does rather than as noise, and so that two seeds
// never give the same bytes (a server's image cache must not hit).
func SyntheticImage(seed uint64, w, h int, format string) (Image, error) {
	if w <= 0 || h <= 0 || w > 8192 || h > 8192 {
		return Image{}, fmt.Errorf("image size %dx%d: want 1 to 8192 pixels a side", w, h)
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	r0, g0, b0 := uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256))
	for y := range h {
		row := img.Pix[y*img.Stride : y*img.Stride+4*w]
		gy := uint8(y * 255 / h)
		for x := range w {
			gx := uint8(x * 255 / w)
			row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = r0+gx, g0+gy, b0+gx/2+gy/2, 255
		}
	}
	for range 12 {
		x0, y0 := rng.IntN(w), rng.IntN(h)
		x1, y1 := min(w, x0+1+rng.IntN(max(w/3, 1))), min(h, y0+1+rng.IntN(max(h/3, 1)))
		c := color.RGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 255}
		for y := y0; y < y1; y++ {
			row := img.Pix[y*img.Stride:]
			for x := x0; x < x1; x++ {
				row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = c.R, c.G, c.B, c.A
			}
		}
	}
	// One pixel from the whole seed: seeds the rectangles happen to share
	// still differ.
	img.Pix[0], img.Pix[1], img.Pix[2] = uint8(seed), uint8(seed>>8), uint8(seed>>16)
	var buf bytes.Buffer
	switch format {
	case "png":
		enc := png.Encoder{CompressionLevel: png.BestSpeed}
		if err := enc.Encode(&buf, img); err != nil {
			return Image{}, err
		}
		return Image{MediaType: "image/png", Data: buf.Bytes()}, nil
	case "jpeg":
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85}); err != nil {
			return Image{}, err
		}
		return Image{MediaType: "image/jpeg", Data: buf.Bytes()}, nil
	}
	return Image{}, fmt.Errorf("image format %q: want png or jpeg", format)
}

// ParseImageSize reads WIDTHxHEIGHT in pixels ("" is 512x512).
func ParseImageSize(s string) (w, h int, err error) {
	if s == "" {
		return 512, 512, nil
	}
	ws, hs, ok := strings.Cut(strings.ToLower(s), "x")
	w, errW := strconv.Atoi(ws)
	h, errH := strconv.Atoi(hs)
	if !ok || errW != nil || errH != nil || w < 1 || h < 1 || w > 8192 || h > 8192 {
		return 0, 0, fmt.Errorf("want WIDTHxHEIGHT in pixels, each 1 to 8192, e.g. 512x512")
	}
	return w, h, nil
}

// QwenPatch is the side in pixels of what one image token covers in
// Qwen2-VL (14-pixel patches merged 2×2): the default image cost.
const QwenPatch = 28

// QwenImageTokens counts a w×h image as Qwen2-VL does (and knee serve by
// default): ⌈W/28⌉·⌈H/28⌉.
func QwenImageTokens(w, h int) int {
	return ((w + QwenPatch - 1) / QwenPatch) * ((h + QwenPatch - 1) / QwenPatch)
}
