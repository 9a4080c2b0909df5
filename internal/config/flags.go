package config

import (
	"github.com/spf13/pflag"
)

// flag describes one command-line flag of the Keeper configuration.
type flag struct {
	name, usage string
	bind        func(fs *pflag.FlagSet, k *Keeper, name, usage string)
	apply       func(dst, src *Keeper)
}

func str(get func(*Keeper) *string) (func(*pflag.FlagSet, *Keeper, string, string), func(dst, src *Keeper)) {
	return func(fs *pflag.FlagSet, k *Keeper, name, usage string) { fs.StringVar(get(k), name, *get(k), usage) },
		func(dst, src *Keeper) { *get(dst) = *get(src) }
}

func dur(get func(*Keeper) *Duration) (func(*pflag.FlagSet, *Keeper, string, string), func(dst, src *Keeper)) {
	return func(fs *pflag.FlagSet, k *Keeper, name, usage string) { fs.Var(get(k), name, usage) },
		func(dst, src *Keeper) { *get(dst) = *get(src) }
}

// flags are every configuration flag, by name. Commands pick the ones they
// offer.
var flags = func() map[string]flag {
	all := []flag{}
	add := func(name, usage string, b func(*pflag.FlagSet, *Keeper, string, string), a func(dst, src *Keeper)) {
		all = append(all, flag{name: name, usage: usage, bind: b, apply: a})
	}
	b, a := str(func(k *Keeper) *string { return &k.DataDir })
	add("data-dir", "data directory (database, TLS material, services)", b, a)
	b, a = str(func(k *Keeper) *string { return &k.Listen })
	add("listen", "listen address of the API, UI, soul stream and metrics", b, a)
	b, a = str(func(k *Keeper) *string { return &k.DatabaseURL })
	add("database-url", "PostgreSQL URL (postgres://…; env "+EnvDatabaseURL+"); empty: SQLite in the data dir", b, a)
	b, a = str(func(k *Keeper) *string { return &k.KeeperID })
	add("keeper-id", "id of this keeper among several on one database (default: generated into the data dir)", b, a)
	b, a = str(func(k *Keeper) *string { return &k.AdvertiseAddress })
	add("advertise-address", "host:port other keepers on the database reach this one at (default: the listen address)", b, a)
	b, a = str(func(k *Keeper) *string { return &k.LogFormat })
	add("log-format", "log format: text or json", b, a)
	b, a = str(func(k *Keeper) *string { return &k.LogLevel })
	add("log-level", "log level: debug, info, warn or error", b, a)
	b, a = str(func(k *Keeper) *string { return &k.TLS.Cert })
	add("tls-cert", "PEM certificate (chain) to serve instead of the generated one", b, a)
	b, a = str(func(k *Keeper) *string { return &k.TLS.Key })
	add("tls-key", "PEM private key of --tls-cert", b, a)
	b, a = str(func(k *Keeper) *string { return &k.Git.SSHKeyFile })
	add("git-ssh-key", "private key for ssh:// service repositories (default: SSH agent)", b, a)
	b, a = dur(func(k *Keeper) *Duration { return &k.TaskTimeout })
	add("task-timeout", "timeout of tasks that set none", b, a)
	b, a = dur(func(k *Keeper) *Duration { return &k.ShutdownTimeout })
	add("shutdown-timeout", "how long a graceful shutdown may take", b, a)
	b, a = str(func(k *Keeper) *string { return &k.Auth.SigningKeyFile })
	add("signing-key-file", "token signing key file (auth.signing_key_file; default: signing.key in the data dir)", b, a)
	add("plain-http", "serve the API and UI over plain HTTP too (false: TLS only, tokens never in clear)",
		func(fs *pflag.FlagSet, k *Keeper, name, usage string) {
			fs.BoolVar(&k.PlainHTTP, name, k.PlainHTTP, usage)
		},
		func(dst, src *Keeper) { dst.PlainHTTP = src.PlainHTTP })
	add("fan-out", "how many hosts one dispatch works on at once",
		func(fs *pflag.FlagSet, k *Keeper, name, usage string) { fs.IntVar(&k.FanOut, name, k.FanOut, usage) },
		func(dst, src *Keeper) { dst.FanOut = src.FanOut })
	add("max-souls", "soul budget: beyond it a soul is refused as busy with a retry-after and goes to another keeper of its list (0: no budget)",
		func(fs *pflag.FlagSet, k *Keeper, name, usage string) {
			fs.IntVar(&k.MaxSouls, name, k.MaxSouls, usage)
		},
		func(dst, src *Keeper) { dst.MaxSouls = src.MaxSouls })
	add("rebalance", "on a fleet, a keeper that starts with fewer souls than its share asks the busiest keepers to move souls to it",
		func(fs *pflag.FlagSet, k *Keeper, name, usage string) {
			fs.BoolVar(&k.Rebalance, name, k.Rebalance, usage)
		},
		func(dst, src *Keeper) { dst.Rebalance = src.Rebalance })
	add("tls-hosts", "extra host names and addresses of the generated server certificate",
		func(fs *pflag.FlagSet, k *Keeper, name, usage string) {
			fs.StringSliceVar(&k.TLS.Hosts, name, k.TLS.Hosts, usage)
		},
		func(dst, src *Keeper) { dst.TLS.Hosts = src.TLS.Hosts })
	m := make(map[string]flag, len(all))
	for _, f := range all {
		m[f.name] = f
	}
	return m
}()

// Flags binds command-line flags to a Keeper configuration. Bind the flags
// a command offers, parse, then Apply them over the configuration loaded
// from the file and the environment: only flags given on the command line
// override it.
type Flags struct {
	fs  *pflag.FlagSet
	val Keeper
}

// BindFlags registers the named flags (see the list in flags.go; an
// unknown name panics: it is a programming error) on fs, with Default's
// values as their defaults.
func BindFlags(fs *pflag.FlagSet, names ...string) *Flags {
	f := &Flags{fs: fs, val: Default()}
	for _, n := range names {
		d, ok := flags[n]
		if !ok {
			panic("config: unknown flag " + n)
		}
		d.bind(fs, &f.val, d.name, d.usage)
	}
	return f
}

// Apply copies the flags given on the command line over k.
func (f *Flags) Apply(k *Keeper) {
	f.fs.Visit(func(pf *pflag.Flag) {
		if d, ok := flags[pf.Name]; ok {
			d.apply(k, &f.val)
		}
	})
}
