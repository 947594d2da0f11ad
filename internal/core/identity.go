package core

import (
	"crypto/hmac"
	"crypto/sha256"
	"log/slog"
	"strings"
)

// jobIdentity names the job a rank belongs to, from what its launcher
// put in the environment: two jobs that share a rendezvous address (two
// srun steps of one allocation, a torchrun restart, a leftover rank of an
// earlier run) get different identities and so different keys, and can
// never join each other even when no secret is set. The job size and
// the address stay out of it: ranks that disagree on those reach the
// store and are refused with an error that says so.
func jobIdentity(env func(string) (string, bool), launcher string) string {
	get := func(name string) string { v, _ := env(name); return v }
	var b strings.Builder
	b.WriteString(launcher)
	for _, part := range launcherJobIDs(get) {
		b.WriteByte(0)
		b.WriteString(part)
	}
	return b.String()
}

// launcherJobIDs lists the variables that identify one run of a job:
// GOCOLL_JOB_ID when the user sets one, then each launcher's own. Unset
// variables contribute empty strings, which is harmless: what matters is
// that two runs differ in at least one.
func launcherJobIDs(get func(string) string) []string {
	return []string{
		get("GOCOLL_JOB_ID"),
		// SLURM: one allocation runs many steps, possibly at once.
		get("SLURM_JOB_ID"), get("SLURM_STEP_ID"),
		// torchrun: a run id per job, a restart count per restart of it.
		get("TORCHELASTIC_RUN_ID"), get("TORCHELASTIC_RESTART_COUNT"),
		// Open MPI: the PMIx namespace is unique per mpirun job.
		get("PMIX_NAMESPACE"), get("OMPI_MCA_ess_base_jobid"),
		// Kubernetes indexed job: the pod's name is <job>-<index>-<suffix>.
		kubernetesJobName(get("HOSTNAME"), get("JOB_COMPLETION_INDEX")),
	}
}

// kubernetesJobName is the job part of an indexed job's pod name
// ("train-3-x7k2p" with index 3 gives "train"), "" when the name does not
// have that form.
func kubernetesJobName(host, index string) string {
	if host == "" || index == "" {
		return ""
	}
	i := strings.LastIndex(host, "-"+index+"-")
	if i < 0 {
		if strings.HasSuffix(host, "-"+index) { // a pod with a set hostname: <job>-<index>
			return strings.TrimSuffix(host, "-"+index)
		}
		return ""
	}
	return host[:i]
}

// jobKey is what links and the rendezvous authenticate with: the secret
// bound to the job's identity. Without a secret it still keeps jobs
// apart, though anyone who can guess the identity can join.
func jobKey(secret []byte, identity string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("gocoll job key v1\x00"))
	m.Write([]byte(identity))
	return m.Sum(nil)
}

// warnNoSecret says, once per Init, that the job authenticates nobody.
func warnNoSecret(log *slog.Logger, rank int, launcher string) {
	log.Warn("gocoll: no job secret: links and the rendezvous only tell jobs apart, they do not keep strangers out; "+
		"set GOCOLL_SECRET (or pass comm.WithSecret, or use gocoll run, which makes one per job)",
		"rank", rank, "launcher", launcher)
}
