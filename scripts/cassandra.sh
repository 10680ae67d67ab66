#!/usr/bin/env bash
# cassandra.sh runs a single-node Apache Cassandra on loopback for `kura bench` side-by-side
# runs and for the CQL target's integration test (internal/bench/cql, KURA_CASSANDRA).
#
# It needs only Java 17 and Maven (for Maven Central); no Cassandra tarball. The jars of
# org.apache.cassandra:cassandra-all and its runtime dependencies are fetched once with
# `mvn dependency:copy-dependencies` into $CASSANDRA_CACHE/cassandra-$CASSANDRA_VERSION/lib,
# and the node runs CassandraDaemon from them with a minimal cassandra.yaml written into DIR.
#
#   scripts/cassandra.sh fetch          fetch the jars (start does it when needed)
#   scripts/cassandra.sh start [DIR]    write DIR/conf, start the node, wait for CQL
#   scripts/cassandra.sh stop [DIR]     stop the node started in DIR (SIGTERM, then SIGKILL)
#   scripts/cassandra.sh status [DIR]   print whether it runs, its pid, RSS and CPU time
#
# DIR defaults to /tmp/kura-cassandra; it holds conf/, data/, logs/ and cassandra.pid.
# Then, for example:
#   KURA_CASSANDRA=127.0.0.1:9042 go test -run Integration ./internal/bench/cql/
#
# Environment (defaults in brackets):
#   CASSANDRA_VERSION [5.0.9]   5.x: 4.1 does not run on Java 17
#   CASSANDRA_CACHE   [~/.cache/kura]
#   CASSANDRA_HEAP    [1G]      -Xms and -Xmx
#   CASSANDRA_ADDR    [127.0.0.1] listen and native address; must be a loopback address
#   CASSANDRA_PORT    [9042]    CQL native port
#   CASSANDRA_STORAGE_PORT [7000] internode port (bound even on a single node)
#   CASSANDRA_START_TIMEOUT [180] seconds to wait for the CQL port
set -euo pipefail

VERSION=${CASSANDRA_VERSION:-5.0.9}
CACHE=${CASSANDRA_CACHE:-$HOME/.cache/kura}
HOME_DIR=$CACHE/cassandra-$VERSION
HEAP=${CASSANDRA_HEAP:-1G}
ADDR=${CASSANDRA_ADDR:-127.0.0.1}
PORT=${CASSANDRA_PORT:-9042}
STORAGE_PORT=${CASSANDRA_STORAGE_PORT:-7000}
START_TIMEOUT=${CASSANDRA_START_TIMEOUT:-180}

die() { echo "cassandra.sh: $*" >&2; exit 1; }

case $ADDR in
127.*) ;;
*) die "CASSANDRA_ADDR=$ADDR: only loopback (127.x.x.x) addresses are allowed" ;;
esac

fetch() {
	[ -f "$HOME_DIR/lib/cassandra-all-$VERSION.jar" ] && return 0
	command -v mvn >/dev/null || die "mvn not found"
	mkdir -p "$HOME_DIR"
	cat >"$HOME_DIR/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kura.bench</groupId>
  <artifactId>cassandra-fetch</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.cassandra</groupId>
      <artifactId>cassandra-all</artifactId>
      <version>$VERSION</version>
    </dependency>
  </dependencies>
</project>
EOF
	echo "cassandra.sh: fetching cassandra-all $VERSION into $HOME_DIR/lib" >&2
	rm -rf "$HOME_DIR/lib.tmp"
	mvn -q -B -f "$HOME_DIR/pom.xml" dependency:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory="$HOME_DIR/lib.tmp"
	mv "$HOME_DIR/lib.tmp" "$HOME_DIR/lib"
}

# pid_of DIR prints the pid of the node started in DIR if it still runs.
pid_of() {
	local f=$1/cassandra.pid pid
	[ -f "$f" ] || return 1
	pid=$(cat "$f")
	# The pid must still be our java process, not a recycled number.
	grep -qa CassandraDaemon "/proc/$pid/cmdline" 2>/dev/null || return 1
	echo "$pid"
}

write_conf() {
	local dir=$1
	mkdir -p "$dir/conf" "$dir/data" "$dir/logs"
	cat >"$dir/conf/cassandra.yaml" <<EOF
# Minimal single-node configuration written by scripts/cassandra.sh.
cluster_name: kura-bench
num_tokens: 16
allocate_tokens_for_local_replication_factor: 1
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: SimpleSnitch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "$ADDR:$STORAGE_PORT"
listen_address: $ADDR
rpc_address: $ADDR
storage_port: $STORAGE_PORT
native_transport_port: $PORT
start_native_transport: true
data_file_directories:
  - $dir/data/data
commitlog_directory: $dir/data/commitlog
saved_caches_directory: $dir/data/saved_caches
hints_directory: $dir/data/hints
cdc_raw_directory: $dir/data/cdc_raw
# Periodic sync: Cassandra's default; acknowledged writes may be lost in a crash.
commitlog_sync: periodic
commitlog_sync_period: 10000ms
authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer
auto_snapshot: false
EOF
	cat >"$dir/conf/logback.xml" <<EOF
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>$dir/logs/system.log</file>
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <appender name="STDERR" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <filter class="ch.qos.logback.classic.filter.ThresholdFilter"><level>WARN</level></filter>
    <encoder><pattern>%-5level %date{ISO8601} %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/><appender-ref ref="STDERR"/></root>
</configuration>
EOF
}

# The JPMS and Netty options of Cassandra 5.0's conf/jvm17-server.options, without
# which the daemon cannot reach the JDK internals it uses on Java 17.
JVM17_OPTS=(
	-Djdk.attach.allowAttachSelf=true
	--add-exports java.base/jdk.internal.misc=ALL-UNNAMED
	--add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
	--add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED
	--add-exports java.rmi/sun.rmi.server=ALL-UNNAMED
	--add-exports java.sql/java.sql=ALL-UNNAMED
	--add-exports java.base/java.lang.ref=ALL-UNNAMED
	--add-exports jdk.unsupported/sun.misc=ALL-UNNAMED
	--add-exports jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED
	--add-exports jdk.attach/sun.tools.attach=ALL-UNNAMED
	--add-opens java.base/java.lang.module=ALL-UNNAMED
	--add-opens java.base/jdk.internal.loader=ALL-UNNAMED
	--add-opens java.base/jdk.internal.ref=ALL-UNNAMED
	--add-opens java.base/jdk.internal.reflect=ALL-UNNAMED
	--add-opens java.base/jdk.internal.math=ALL-UNNAMED
	--add-opens java.base/jdk.internal.module=ALL-UNNAMED
	--add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED
	--add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
	--add-opens java.base/sun.nio.ch=ALL-UNNAMED
	--add-opens java.base/java.io=ALL-UNNAMED
	--add-opens java.base/java.lang.reflect=ALL-UNNAMED
	--add-opens jdk.compiler/com.sun.tools.javac=ALL-UNNAMED
	--add-opens java.base/java.lang=ALL-UNNAMED
	--add-opens java.base/java.util=ALL-UNNAMED
	-Dio.netty.tryReflectionSetAccessible=true
	-Dio.netty.allocator.useCacheForAllThreads=true
	-Dio.netty.allocator.maxOrder=11
)

start() {
	local dir=$1 pid jamm deadline
	if pid=$(pid_of "$dir"); then
		echo "cassandra.sh: already running in $dir (pid $pid)" >&2
		return 0
	fi
	command -v java >/dev/null || die "java not found"
	fetch
	write_conf "$dir"
	jamm=$(find "$HOME_DIR/lib" -name 'jamm-*.jar' | head -1)
	# setsid: the node must not die with the shell that started it, nor take its signals.
	setsid java \
		-Xms"$HEAP" -Xmx"$HEAP" -Xss256k \
		-XX:+UseG1GC -XX:+ParallelRefProcEnabled -XX:MaxGCPauseMillis=300 \
		-XX:+ExitOnOutOfMemoryError -XX:+HeapDumpOnOutOfMemoryError -XX:HeapDumpPath="$dir/logs" \
		-XX:ErrorFile="$dir/logs/hs_err_%p.log" \
		-Djava.net.preferIPv4Stack=true \
		"${JVM17_OPTS[@]}" \
		${jamm:+-javaagent:"$jamm"} \
		-Dcassandra.config="file://$dir/conf/cassandra.yaml" \
		-Dcassandra.storagedir="$dir/data" \
		-Dcassandra.logdir="$dir/logs" \
		-Dlogback.configurationFile="$dir/conf/logback.xml" \
		-Dcassandra-foreground=yes \
		-cp "$HOME_DIR/lib/*" \
		org.apache.cassandra.service.CassandraDaemon \
		>"$dir/logs/stdout.log" 2>&1 </dev/null &
	echo $! >"$dir/cassandra.pid"
	deadline=$((SECONDS + START_TIMEOUT))
	until (exec 3<>"/dev/tcp/$ADDR/$PORT") 2>/dev/null; do
		if ! kill -0 "$(cat "$dir/cassandra.pid")" 2>/dev/null; then
			tail -n 30 "$dir/logs/stdout.log" >&2
			die "the node exited during start-up; see $dir/logs/"
		fi
		if [ $SECONDS -ge $deadline ]; then
			stop "$dir"
			die "no CQL port $ADDR:$PORT after ${START_TIMEOUT}s; stopped; see $dir/logs/"
		fi
		sleep 1
	done
	echo "cassandra.sh: Cassandra $VERSION listening on $ADDR:$PORT (pid $(cat "$dir/cassandra.pid"), ${SECONDS}s)"
}

stop() {
	local dir=$1 pid
	if ! pid=$(pid_of "$dir"); then
		rm -f "$dir/cassandra.pid"
		echo "cassandra.sh: not running in $dir"
		return 0
	fi
	kill -TERM "$pid"
	for _ in $(seq 60); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "cassandra.sh: pid $pid ignored SIGTERM for 60s; sending SIGKILL" >&2
		kill -KILL "$pid"
	fi
	rm -f "$dir/cassandra.pid"
	echo "cassandra.sh: stopped pid $pid"
}

status() {
	local dir=$1 pid
	if ! pid=$(pid_of "$dir"); then
		echo "cassandra.sh: not running in $dir"
		return 3
	fi
	# utime+stime are fields 14 and 15 of /proc/PID/stat, in clock ticks.
	local ticks cpu
	ticks=$(getconf CLK_TCK)
	cpu=$(awk -v t="$ticks" '{printf "%.1f", ($14+$15)/t}' "/proc/$pid/stat")
	echo "cassandra.sh: running in $dir: pid $pid, $(awk '/VmRSS/{print $2 $3}' "/proc/$pid/status") RSS, ${cpu}s CPU"
}

cmd=${1:-}
dir=${2:-/tmp/kura-cassandra}
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
case $cmd in
fetch) fetch ;;
start) start "$dir" ;;
stop) stop "$dir" ;;
status) status "$dir" ;;
*) die "usage: $0 fetch | start [DIR] | stop [DIR] | status [DIR]" ;;
esac
