package cli

import (
	"github.com/knee-dev/knee/internal/cluster"
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
// Secret: knee cluster job [flags] -- bench [its flags].
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
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		s.Args = args
		return cluster.Write(env.Stdout, s, *secret, *retries, *expectTPS)
	}
	return cmd
}
