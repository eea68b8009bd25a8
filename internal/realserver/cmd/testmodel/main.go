// Command testmodel writes knee's random-weight llama test model as a GGUF
// file, its tokenizer.json (for knee --tokenizer) and an Ollama Modelfile
// beside them (scripts/ollama.sh uses all three).
//
//	go run ./internal/realserver/cmd/testmodel -dir DIR [-seed N]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/knee-dev/knee/internal/realserver"
)

func main() {
	dir := flag.String("dir", "", "folder to write model.gguf, tokenizer.json and Modelfile into (created if missing)")
	def := realserver.DefaultModelConfig()
	cfg := def
	flag.Uint64Var(&cfg.Seed, "seed", def.Seed, "random seed of the weights")
	flag.IntVar(&cfg.Embed, "embed", def.Embed, "embedding length")
	flag.IntVar(&cfg.Layers, "layers", def.Layers, "transformer blocks")
	flag.IntVar(&cfg.FFN, "ffn", def.FFN, "feed-forward length")
	flag.IntVar(&cfg.Heads, "heads", def.Heads, "attention heads")
	flag.IntVar(&cfg.KVHeads, "kv-heads", def.KVHeads, "key/value heads")
	f32 := flag.Bool("f32", def.MatrixType == realserver.TensorF32, "store the weight matrices as F32 (else F16)")
	flag.Parse()
	cfg.MatrixType = realserver.TensorF16
	if *f32 {
		cfg.MatrixType = realserver.TensorF32
	}
	if *dir == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: testmodel -dir DIR [-seed N] [-embed N -layers N -ffn N -heads N -kv-heads N]")
		os.Exit(2)
	}
	if err := write(*dir, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "testmodel:", err)
		os.Exit(1)
	}
}

func write(dir string, cfg realserver.ModelConfig) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "model.gguf"))
	if err != nil {
		return err
	}
	info, err := realserver.WriteLlamaModel(f, cfg)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	tf, err := os.Create(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return err
	}
	err = realserver.WriteTokenizerJSON(tf, cfg)
	if cerr := tf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "Modelfile"), []byte(realserver.Modelfile), 0o644); err != nil {
		return err
	}
	fmt.Println(info)
	return nil
}
