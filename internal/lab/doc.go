// Package lab builds a test lab of isolated Debian hosts on one machine, for
// the end-to-end tests (test/e2e) and for demos (labctl).
//
// A host is a network namespace with its own address on a private bridge, a
// PID, mount, UTS and IPC namespace, and its own root filesystem: an overlay
// whose lower layer is a cached debootstrap'd Debian (minbase plus a few
// tools) and whose upper layer is private to the host. Hosts come in two
// flavours (Config.Flavour): systemd, whose PID 1 is systemd 252 (the
// default, what real hosts run), and sysv, whose PID 1 is tini. Each
// flavour has its own cached base.
// Hosts have no route to any registry: they install packages from a local
// flat apt repository built once from downloaded .debs and mounted read-only
// at /srv/lab-repo.
//
// Choices worth knowing:
//
//   - Processes are only ever stopped by PID, or by namespace identity (every
//     process whose network namespace is the host's), never by name: other
//     labs and sessions may run on the same machine.
//   - systemd hosts boot as described in ../shared/notes/systemd-lab.md: the
//     host's PID 1 starts in its own directory of the machine's cgroup2
//     tree (CLONE_INTO_CGROUP) and unshares its cgroup namespace there;
//     cgroup2 is mounted on the host's /sys/fs/cgroup; Boot waits for
//     READY=1 on a notify socket bound to /run/host/notify. Shutdown sends
//     SIGRTMIN+3; once PID 1 has become systemd-shutdown (every unit
//     stopped) the lab cuts the power rather than wait for its global
//     sync. A host whose systemd asks to reboot is booted again by the
//     process that booted it. KillAll (a power cut) writes cgroup.kill.
//     Every boot has its own /proc/sys/kernel/random/boot_id. The one
//     machine setting the lab changes: before a systemd host boots it
//     raises fs.inotify.max_user_instances to 8192 when it is lower (each
//     host's systemd holds about seven inotify instances as the machine's
//     root; the kernel's default of 128 stops the next systemd host past
//     about 18 on the machine, all labs together).
//   - sysv hosts have no systemd. Services use the SysV /etc/init.d path.
//     Their base ships a runlevel stub that answers "N 2", so invoke-rc.d
//     behaves as on a sysvinit host in runlevel 2: a package's postinst
//     starts its service when the service is enabled (redis-server starts
//     on install, as on a real Debian host), and "service x start" always
//     works. There is no policy-rc.d.
//   - /proc, /sys, /dev, /dev/pts, /dev/shm, /run and the repository are
//     mounted inside each host's own mount namespace, after pivot_root, so
//     they vanish with the host's processes and never leak into the machine's
//     mount table. Only the overlay root (and ip's netns files) live in the
//     machine's mount namespace.
//   - Hosts have a default route via the bridge address (.1, where the Keeper
//     listens), but the bridge carries a policy-routing rule that makes every
//     routed packet arriving from it unreachable: traffic never leaves the
//     machine even where IP forwarding is on, and no NAT is set up.
//   - /proc/sys is read-only inside a host except net.*, which belongs to
//     the host's network namespace: a host cannot retune the machine's
//     kernel. Beyond that the lab isolates for testing, not for security:
//     hosts run as root with the machine's capabilities.
//   - Everything a lab creates is recorded in a state file under
//     /run/soulstack-lab before it is created, or named after the lab (its
//     cgroup directory <cgroup2>/soulstack-lab/<lab>), so Cleanup can
//     remove the leftovers of a crashed run.
//
// Caches live under $SOULSTACK_LAB_CACHE (default /var/cache/soulstack-lab):
// the base root filesystems, the downloaded .debs, a private apt state used
// to resolve dependencies against a base, and one repository per base and
// package set. They are built under a lock (flock on .lock in the cache),
// so labs of several processes build each of them once.
// The Debian mirror is taken from the machine's apt sources unless
// $SOULSTACK_LAB_MIRROR names one.
package lab
