#!/usr/bin/env bash
# PID 1 of a simulated Targon VM, run by `unshare --mount --net --pid --uts --fork --mount-proc`.
# It gives the VM its own filesystem view (overlays on the host's /etc, /usr, /var, /root, /home, /opt,
# private /run, /tmp and /dev), its own loopback, a real OpenSSH sshd for user ubuntu, and the recording
# test doubles for what needs the internet or a GPU. Nothing outside the VM directory is modified.
#
# $1: the VM directory (host path). It holds scenario.env, authorized_keys, the sshd host key, and
# receives ssh.sock (the sshd port, exposed to the host as a unix socket) and the overlay upper layers.
set -Eeuo pipefail
VM_DIR=$1
DOUBLES_DIR=$2
# shellcheck source=/dev/null
. "$VM_DIR/scenario.env"

mount --make-rprivate /
for dir in etc usr var root home opt; do
  mkdir -p "$VM_DIR/upper/$dir" "$VM_DIR/work/$dir"
  mount -t overlay overlay -o "lowerdir=/$dir,upperdir=$VM_DIR/upper/$dir,workdir=$VM_DIR/work/$dir" "/$dir"
done

mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p /run/vm /run/vm-doubles /run/systemd/system /run/sshd
mount --bind "$VM_DIR" /run/vm
mount --bind "$DOUBLES_DIR" /run/vm-doubles
# From here on the host paths may be hidden (they can live under /tmp): use the bind mounts.
VM_DIR=/run/vm
DOUBLES_DIR=/run/vm-doubles
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=0755 tmpfs /dev
for node in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
  IFS=: read -r name major minor <<<"$node"
  mknod -m 666 "/dev/$name" c "$major" "$minor"
done
mkdir -p /dev/pts /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts
ln -s pts/ptmx /dev/ptmx
ln -s /proc/self/fd /dev/fd
: >/dev/nvidiactl # the NVIDIA driver's control node, as on a GPU VM
ip link set lo up
hostname "$VM_HOSTNAME"
# An image whose hostname does not resolve: sudo then warns on every call (read-only: nor can /etc/hosts be written).
case ${SIM_HOSTNAME_UNRESOLVED:-0} in
  0) echo "127.0.1.1 $VM_HOSTNAME" >>/etc/hosts ;;
  read-only) cp /etc/hosts /run/vm-hosts && mount --bind /run/vm-hosts /etc/hosts && mount -o remount,bind,ro /etc/hosts ;;
esac
echo "$VM_HOSTNAME" >/etc/hostname

# The image: Ubuntu 24.04 with the NVIDIA driver, user ubuntu with passwordless sudo.
rm -f /etc/os-release
cat >/etc/os-release <<'OS'
PRETTY_NAME="Ubuntu 24.04.1 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
VERSION="24.04.1 LTS (Noble Numbat)"
VERSION_CODENAME=noble
ID=ubuntu
ID_LIKE=debian
OS
id ubuntu >/dev/null 2>&1 || useradd -m -s /bin/bash ubuntu
usermod -p '*' ubuntu # no password login, but not "locked" (sshd refuses locked accounts)
if [ -n "${SIM_SUDO_PASSWORD:-}" ]; then
  # An image where sudo asks for the VM password (vm_config.password).
  echo "ubuntu:$SIM_SUDO_PASSWORD" | chpasswd
  echo 'ubuntu ALL=(ALL) ALL' >/etc/sudoers.d/90-cloud-init-users
else
  echo 'ubuntu ALL=(ALL) NOPASSWD:ALL' >/etc/sudoers.d/90-cloud-init-users
fi
chmod 0440 /etc/sudoers.d/90-cloud-init-users
install -d -m 0700 -o ubuntu -g ubuntu /home/ubuntu/.ssh
install -m 0600 -o ubuntu -g ubuntu "$VM_DIR/authorized_keys" /home/ubuntu/.ssh/authorized_keys

# Recording doubles replace only what needs the internet or hardware.
install -d /usr/local/lib/sim-doubles /var/lib/sim-doubles/units /var/log/sim-doubles /var/lib/dpkg /var/lib/apt/lists /var/cache/apt/archives
install -m 0755 "$DOUBLES_DIR"/double.sh /usr/local/lib/sim-doubles/
install -m 0644 "$DOUBLES_DIR"/shim-server.mjs /usr/local/lib/sim-doubles/
for tool in apt-get dpkg systemctl systemd-run curl nvidia-smi; do
  install -m 0755 "$DOUBLES_DIR/double.sh" "/usr/bin/$tool"
done
rm -f /usr/bin/docker /usr/local/bin/docker /usr/bin/nvidia-ctk /usr/local/bin/dstack-shim
mkdir -p /etc/sim-vm /etc/targon-fleet
cp "$VM_DIR/scenario.env" /etc/sim-vm/scenario.env
# The VM's clock is the host's; a test skews it for the idle sampler by writing seconds into clock-offset.
ln -sf /run/vm/clock-offset /etc/targon-fleet/clock-offset
if [ "${SIM_DOCKER_PREINSTALLED:-0}" = 1 ]; then /usr/local/lib/sim-doubles/double.sh --preinstall docker-ce; fi
if [ "${SIM_TOOLKIT_PREINSTALLED:-0}" = 1 ]; then /usr/local/lib/sim-doubles/double.sh --preinstall nvidia-container-toolkit; fi
: >/var/log/sim-doubles/calls.log
: >/var/log/sim-doubles/calls.log.timed
chmod 0666 /var/log/sim-doubles/calls.log /var/log/sim-doubles/calls.log.timed

# sshd, configured as Ubuntu's: drop-ins first, forwarding allowed.
cat >/etc/ssh/sshd_config <<'SSHD'
Include /etc/ssh/sshd_config.d/*.conf
Port 22
ListenAddress 127.0.0.1
HostKey /run/vm/ssh_host_ed25519_key
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
UsePAM no
PidFile /run/sshd.pid
Subsystem sftp internal-sftp
SSHD
mkdir -p /etc/ssh/sshd_config.d
rm -f /etc/ssh/sshd_config.d/*

if [ "${SIM_DPKG_LOCK_SECONDS:-0}" != 0 ]; then
  (exec 9>/var/lib/dpkg/lock-frontend && sleep "$SIM_DPKG_LOCK_SECONDS") &
fi

mkfifo -m 600 /run/vm/control # see the end of this script

# The SSH port reaches the host as a unix socket in the VM directory; the host side maps it to TCP.
socat UNIX-LISTEN:/run/vm/ssh.sock,fork,mode=600 TCP:127.0.0.1:22,nodelay &
(
  sleep "${SIM_SSHD_DELAY_SECONDS:-0}"
  /usr/sbin/sshd -D -e 2>>/run/vm/sshd.log
) &

# Control requests from the test harness, e.g. a new host key. Blocking on a FIFO keeps an idle VM at
# zero CPU (a polling loop here costs more than the bootstrap once sixteen VMs share two cores).
while :; do
  read -r request </run/vm/control || continue
  case $request in
    rotate-host-key) kill -HUP "$(cat /run/sshd.pid)" ;;
    # Services stop and the enabled ones start again; SSH sessions end (sshd itself stays, as the port must).
    reboot)
      pkill -f '^sshd: [^ ]+@' || true
      /usr/local/lib/sim-doubles/double.sh --reboot
      ;;
  esac
done
