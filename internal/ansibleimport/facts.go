package ansibleimport

import (
	"fmt"
	"sort"
	"strings"
)

// Fact maps one Ansible fact to the soulprint field that carries the same
// information (SPEC §7, soulprint.self).
type Fact struct {
	// Ansible is the fact's name without the ansible_ prefix, as it is
	// read both as ansible_<name> and as ansible_facts.<name> (or
	// ansible_facts['<name>']).
	Ansible string
	// CEL is the expression that reads it on the host being evaluated.
	CEL string
	// Values, when set, says how Ansible's values become ours: a string
	// literal compared with the fact is rewritten through it (Ansible's
	// "Debian" is soulprint's "debian"). A literal it does not know makes
	// the comparison approximate.
	Values func(string) (string, bool)
	// Never, when set, tells the values this fact has in Ansible (or that
	// roles compare it with) that no host a soul runs on has: a comparison
	// with one is a constant, exactly as it is on every Linux host.
	Never func(string) bool
	// Lost, when set, says what the mapping does not carry over: an
	// expression reading this fact is approximated, never exact.
	Lost string
}

var familyMap = map[string]string{"Debian": "debian", "RedHat": "redhat", "Suse": "suse", "Archlinux": "arch", "Alpine": "alpine"}

// familyValues maps ansible_os_family to soulprint's os.family.
func familyValues(s string) (string, bool) {
	v, ok := familyMap[s]
	return v, ok
}

// spelling is the CEL that turns a fact read from soulprint back into
// Ansible's spelling of its value, where the two differ and the value is
// written out (a template name "memcached-{{ ansible_os_family }}.conf.j2"
// must name memcached-Debian.conf.j2); "" when no table says how.
func spelling(f Fact, code string) string {
	var m map[string]string
	switch f.Ansible {
	case "os_family":
		m = familyMap
	case "distribution":
		m = distributionMap
	case "architecture", "machine":
		m = map[string]string{"x86_64": "amd64", "aarch64": "arm64"}
	default:
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q: %q", m[k], k)
	}
	b.WriteString("}")
	return fmt.Sprintf("(%s in %s ? %s[%s] : %s)", code, b.String(), b.String(), code, code)
}

// notLinuxFamily is an os_family value no Linux host has in Ansible: the
// families of other systems (souls run on Linux only), and distribution
// names Ansible folds into a family (its os_family of Rocky is RedHat, so
// ansible_os_family == "Rocky" is false on every host there too).
func notLinuxFamily(s string) bool {
	switch s {
	case "FreeBSD", "OpenBSD", "NetBSD", "DragonFly", "Darwin", "Solaris", "SunOS", "AIX", "HP-UX", "Windows",
		"Rocky", "AlmaLinux", "CentOS", "Fedora", "OracleLinux", "Amazon", "Ubuntu", "Linux Mint", "Kali", "Raspbian":
		return true
	}
	return false
}

// distributionValues maps ansible_distribution to soulprint's
// os.distribution (os-release's ID).
func distributionValues(s string) (string, bool) {
	v, ok := distributionMap[s]
	return v, ok
}

var distributionMap = map[string]string{"Debian": "debian", "Ubuntu": "ubuntu", "CentOS": "centos", "RedHat": "rhel", "Rocky": "rocky",
	"AlmaLinux": "almalinux", "Fedora": "fedora", "Amazon": "amzn", "OracleLinux": "ol", "Archlinux": "arch",
	"Alpine": "alpine", "SLES": "sles", "openSUSE Leap": "opensuse-leap", "Linux Mint": "linuxmint", "Kali": "kali"}

// archValues maps Ansible's ansible_architecture (uname -m) to soulprint's
// os.arch (Go's names).
func archValues(s string) (string, bool) {
	switch s {
	case "x86_64":
		return "amd64", true
	case "aarch64":
		return "arm64", true
	}
	return "", false
}

// serviceMgrValues maps ansible_service_mgr to soulprint's init.
func serviceMgrValues(s string) (string, bool) {
	switch s {
	case "systemd":
		return "systemd", true
	case "sysvinit", "service":
		return "sysv", true
	}
	return "", false
}

// facts is the one table of Ansible facts the importer knows; README's
// "Coming from Ansible" section prints it (FactTable).
var facts = map[string]Fact{
	"os_family":                  {CEL: "soulprint.self.os.family", Values: familyValues, Never: notLinuxFamily},
	"distribution":               {CEL: "soulprint.self.os.distribution", Values: distributionValues},
	"distribution_release":       {CEL: "soulprint.self.os.codename"},
	"distribution_version":       {CEL: "soulprint.self.os.version"},
	"distribution_major_version": {CEL: `split(soulprint.self.os.version, ".")[0]`},
	"lsb.codename":               {CEL: "soulprint.self.os.codename"},
	"architecture":               {CEL: "soulprint.self.os.arch", Values: archValues},
	"machine":                    {CEL: "soulprint.self.os.arch", Values: archValues},
	"hostname":                   {CEL: "soulprint.self.hostname", Lost: "soulprint's hostname is the full host name, Ansible's ansible_hostname stops at the first dot"},
	"nodename":                   {CEL: "soulprint.self.hostname"},
	"fqdn":                       {CEL: "soulprint.self.hostname", Lost: "soulprint's hostname is what the host calls itself, not a DNS lookup"},
	"kernel":                     {CEL: "soulprint.self.kernel"},
	"service_mgr":                {CEL: "soulprint.self.init", Values: serviceMgrValues},
	"processor_vcpus":            {CEL: "soulprint.self.cpus"},
	"processor_nproc":            {CEL: "soulprint.self.cpus"},
	"processor_count":            {CEL: "soulprint.self.cpus", Lost: "soulprint counts logical CPUs, Ansible's processor_count counts sockets"},
	"processor_cores":            {CEL: "soulprint.self.cpus", Lost: "soulprint counts logical CPUs, not cores per socket"},
	"memtotal_mb":                {CEL: "soulprint.self.memory_mb"},
	"virtualization_type":        {CEL: "soulprint.self.virtualization"},
	"default_ipv4.address":       {CEL: "soulprint.self.network.primary_ip"},
	"default_ipv4":               {CEL: "soulprint.self.network", Lost: "only .address has a soulprint field (network.primary_ip)"},
	"all_ipv4_addresses":         {CEL: "soulprint.self.network.interfaces", Lost: "soulprint lists addresses per interface (a map), not one flat list"},
	"mounts":                     {CEL: "soulprint.self.mounts", Lost: "soulprint's mounts have path/device/fstype/options, not Ansible's mount/device/fstype/options/size_*"},
	"system":                     {CEL: `"Linux"`},
	"env":                        {CEL: "", Lost: "a soul does not report its environment"},
	"python":                     {CEL: "", Lost: "a soul needs no Python"},
	"python_version":             {CEL: "", Lost: "a soul needs no Python"},
	"user_id":                    {CEL: `"root"`, Lost: "a soul always runs as root"},
	"date_time":                  {CEL: "", Lost: "the time of a run is not a fact"},
	"distribution_file_variety":  {CEL: "soulprint.self.os.family", Values: familyValues, Lost: "approximated by the OS family"},
	"pkg_mgr":                    {CEL: "", Lost: "the package manager follows os.family (apt on debian, dnf on redhat)"},
	"selinux":                    {CEL: "", Lost: "SELinux state is not a fact"},
	"interfaces":                 {CEL: "keys(soulprint.self.network.interfaces)"},
}

// lookupFact returns the fact the name (without ansible_) names.
func lookupFact(name string) (Fact, bool) {
	f, ok := facts[name]
	if ok {
		f.Ansible = name
	}
	return f, ok
}

// FactTable lists the fact table sorted by the Ansible name, for the docs.
func FactTable() []Fact {
	out := make([]Fact, 0, len(facts))
	for name := range facts {
		f, _ := lookupFact(name)
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ansible < out[j].Ansible })
	return out
}
