package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/knee-dev/knee/internal/cluster"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/spf13/cobra"
)

// newClusterCmd is knee cluster; its one subcommand is job.
func newClusterCmd(env *Env) *cobra.Command {
	cmd := newCommand(env, "cluster")
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		return Usagef("knee cluster: want a subcommand: job (print a Kubernetes Indexed Job manifest)")
	}
	cmd.AddCommand(newClusterJobCmd(env))
	return cmd
}

// newClusterJobCmd prints the Indexed Job manifest that runs a bench or
// sweep as --pods shards meeting in the PostgreSQL database named by a
// Secret: knee cluster job [flags] -- bench|sweep [its flags].
func newClusterJobCmd(env *Env) *cobra.Command {
	cmd := newCommand(env, "cluster job")
	fs := cmd.Flags()
	var s cluster.JobSpec
	fs.StringVar(&s.Name, "run-name", "", "the run name the shards share; also the Job's name (lower-case letters, digits, '-')")
	fs.StringVar(&s.Image, "image", "", "the knee container image the pods run")
	fs.IntVar(&s.Pods, "pods", 0, "shards (completions = parallelism); 0: as many as the sizing advice says")
	secret := fs.String("secret", "knee-db/url", "SECRET or SECRET/KEY: the Secret entry holding the postgres:// URL (KNEE_DB in each pod)")
	fs.StringVar(&s.Namespace, "namespace", "", "the Job's namespace (default: kubectl's)")
	fs.StringVar(&s.CPU, "cpu", "2", "CPU each pod requests and is limited to")
	fs.StringVar(&s.Memory, "memory", "1Gi", "memory each pod requests and is limited to")
	retries := fs.Int("retries", 2, "restarts of a failed index (backoffLimitPerIndex)")
	expectTPS := fs.Float64("expect-tps", 0, "streamed output tokens/s the load will reach, for the sizing advice (default: --rate × --output-tokens from the bench arguments)")
	cmd.RunE = func(c *cobra.Command, args []string) error {
		s.Args = args
		return clusterJob(c.Context(), env, s, *secret, *retries, *expectTPS)
	}
	return cmd
}

func clusterJob(ctx context.Context, env *Env, s cluster.JobSpec, secret string, retries int, expectTPS float64) error {
	advised, why, err := s.Settle(secret, retries, expectTPS, rand.Uint64()>>12)
	if err != nil {
		return err
	}
	out, err := cluster.Manifest(s)
	if err != nil {
		return Usagef("%v", err)
	}
	if err := checkJobArgs(ctx, env, s.Args, s.Pods); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "# knee cluster job: %d shard(s) of one %s run named %q; kubectl apply -f - (docs/cluster.md)\n",
		s.Pods, s.Args[0], s.Name)
	fmt.Fprintf(env.Stdout, "# sizing: %s\n", why)
	if advised > s.Pods {
		fmt.Fprintf(env.Stdout, "# warning: --pods %d is below the advice (%d): the shards' own CPU may show as lag\n", s.Pods, advised)
	}
	_, err = env.Stdout.Write(out)
	return err
}

// checkJobArgs parses the pods' command with the command's own flag
// definitions, so that what every pod would refuse (an unknown flag, a
// value of the wrong type, an objective knee cannot read, no --url, fewer
// users than pods) is refused here, before a Job is written whose every
// pod exits 2.
func checkJobArgs(ctx context.Context, env *Env, args []string, pods int) error {
	if ctx == nil {
		ctx = context.Background()
	}
	var cmd *cobra.Command
	switch args[0] {
	case "bench":
		cmd = newBenchCmd(ctx, env)
	case "sweep":
		cmd = newSweepCmd(ctx, env)
	default: // cluster.Manifest refuses any other command first
		return Usagef("after --: want bench or sweep, got %q", args[0])
	}
	fs := cmd.Flags()
	if err := cmd.ParseFlags(args[1:]); err != nil {
		return Usagef("after --: knee %s: %v", args[0], err)
	}
	if fs.NArg() > 0 {
		return Usagef("after --: knee %s: unexpected argument %q (flags only)", args[0], fs.Arg(0))
	}
	if v := fs.Lookup("url"); v == nil || v.Value.String() == "" {
		return Usagef("after --: knee %s wants --url: every pod loads one server (without it each pod would start an embedded server of its own)", args[0])
	}
	if l, ok := fs.Lookup("slo").Value.(*stringList); ok {
		if _, err := slo.ParseAll(*l); err != nil {
			return Usagef("after --: --slo: %v", err)
		}
	}
	closedLoop := !flagGiven(fs, "rate") && !flagGiven(fs, "sessions")
	if users := fs.Lookup("concurrency").Value.String(); closedLoop && users != "" {
		for _, v := range strings.Split(users, ",") {
			if n, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && n < float64(pods) {
				return Usagef("after --: --concurrency %s with %d pods leaves a pod without a user; want at least one user per pod at every step (or fewer --pods)", users, pods)
			}
		}
	}
	return nil
}
