// Jedis's and Lettuce's part of kura's client matrix (clients/matrix_test.go runs it with
// the JDK's single-file launcher and the classpath Maven resolved from pom.xml).
//
// Usage: java -cp CLASSPATH Check.java jedis|lettuce ADDR OTHER PREFIX
//
// Runs every check of the matrix through the client's typed synchronous API against the
// server at ADDR (host:port; OTHER is another node of the same cluster, or ADDR again) and
// prints one line per variant and check, "VARIANT CHECK name=value ..." or "VARIANT CHECK
// ERROR message", in the canonical form clients/doc.go describes.

import io.lettuce.core.ClientOptions;
import io.lettuce.core.KeyValue;
import io.lettuce.core.LettuceFutures;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanIterator;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.protocol.ProtocolVersion;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.RedisProtocol;
import redis.clients.jedis.Response;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.params.SetParams;
import redis.clients.jedis.resps.ScanResult;

public class Check {
  /** One check: fills out with name=value pairs, in order. */
  interface Body<C> {
    void run(C c, C other, String p, Map<String, Object> out) throws Exception;
  }

  record Named<C>(String name, Body<C> body) {}

  static String text(Object v) {
    if (v == null) return "nil";
    if (v instanceof Boolean b) return b ? "1" : "0";
    if (v instanceof List<?> l) {
      List<String> parts = new ArrayList<>();
      for (Object x : l) parts.add(text(x));
      return "[" + String.join(",", parts) + "]";
    }
    if (v instanceof Map<?, ?> m) {
      List<String> parts = new ArrayList<>();
      new TreeMap<>(m).forEach((k, x) -> parts.add(k + ":" + text(x)));
      return "{" + String.join(",", parts) + "}";
    }
    return String.valueOf(v);
  }

  static Object within(long v, long lo, long hi) {
    return v >= lo && v <= hi ? lo + ".." + hi : v;
  }

  static String resp(String clientInfo) {
    Matcher m = Pattern.compile("resp=(\\d)").matcher(clientInfo);
    return m.find() ? m.group(1) : "unknown";
  }

  static Set<String> scanKeys(String p) {
    Set<String> want = new HashSet<>();
    for (int i = 0; i < 40; i++) want.add(String.format("%sk%02d", p, i));
    return want;
  }

  static Map<String, String> values(Set<String> keys) {
    Map<String, String> m = new TreeMap<>();
    for (String k : keys) m.put(k, "v");
    return m;
  }

  static void sleepUntil(long startNanos, long millis) throws InterruptedException {
    long left = millis - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
    if (left > 0) Thread.sleep(left);
  }

  // ---- Jedis ----

  static List<Named<Jedis>> jedisChecks() {
    List<Named<Jedis>> l = new ArrayList<>();
    l.add(new Named<>("proto", (r, o, p, out) -> out.put("resp", resp(r.clientInfo()))));
    l.add(new Named<>("strings", (r, o, p, out) -> {
      r.del(p + "k1", p + "k2", p + "k3", p + "none");
      out.put("set", r.set(p + "k1", "v1"));
      out.put("get", r.get(p + "k1"));
      out.put("get_other", o.get(p + "k1"));
      out.put("get_missing", r.get(p + "none"));
      out.put("mset", r.mset(p + "k2", "a", p + "k3", "b"));
      out.put("mget", r.mget(p + "k1", p + "k2", p + "k3", p + "none"));
      out.put("exists", r.exists(p + "k1", p + "k2", p + "none"));
      out.put("del", r.del(p + "k2", p + "none"));
      out.put("exists_after", r.exists(new String[] {p + "k2"}));
    }));
    l.add(new Named<>("set_options", (r, o, p, out) -> {
      r.del(p + "k", p + "none");
      out.put("nx", r.set(p + "k", "v1", SetParams.setParams().nx()));
      out.put("nx_again", r.set(p + "k", "v2", SetParams.setParams().nx()));
      out.put("xx", r.set(p + "k", "v3", SetParams.setParams().xx()));
      out.put("xx_missing", r.set(p + "none", "x", SetParams.setParams().xx()));
      out.put("get_option", r.setGet(p + "k", "v4"));
      out.put("value", r.get(p + "k"));
    }));
    l.add(new Named<>("hashes", (r, o, p, out) -> {
      String h = p + "h";
      r.del(h, p + "none");
      out.put("hset", r.hset(h, Map.of("f1", "v1", "f2", "v2")));
      out.put("hset_update", r.hset(h, "f1", "x"));
      out.put("hget", r.hget(h, "f1"));
      out.put("hget_missing", r.hget(h, "nofield"));
      out.put("hgetall", r.hgetAll(h));
      out.put("hlen", r.hlen(h));
      out.put("hdel", r.hdel(h, "f2", "nofield"));
      out.put("hlen_after", r.hlen(h));
      out.put("hgetall_other", o.hgetAll(h));
      out.put("hgetall_missing", r.hgetAll(p + "none"));
    }));
    l.add(new Named<>("ttl", (r, o, p, out) -> {
      String k = p + "k", px = p + "px", none = p + "none";
      r.del(k, px, none);
      out.put("set_px", r.set(px, "v", SetParams.setParams().px(2000)));
      long start = System.nanoTime();
      out.put("pttl", within(r.pttl(px), 1, 2000));
      out.put("set", r.set(k, "v"));
      out.put("ttl_none", r.ttl(k));
      out.put("expire", r.expire(k, 100));
      out.put("ttl", within(r.ttl(k), 1, 100));
      out.put("persist", r.persist(k));
      out.put("ttl_persisted", r.ttl(k));
      out.put("persist_again", r.persist(k));
      out.put("set_ex", r.set(k, "v", SetParams.setParams().ex(50)));
      out.put("ttl_ex", within(r.ttl(k), 1, 50));
      out.put("ttl_missing", r.ttl(none));
      out.put("expire_missing", r.expire(none, 10));
      sleepUntil(start, 2300);
      out.put("expired", r.get(px));
      out.put("ttl_expired", r.ttl(px));
    }));
    l.add(new Named<>("scan", (r, o, p, out) -> {
      Set<String> want = scanKeys(p);
      List<String> kv = new ArrayList<>();
      values(want).forEach((k, v) -> { kv.add(k); kv.add(v); });
      r.mset(kv.toArray(new String[0]));
      r.hset(p + "h", "f", "v");
      want.add(p + "h");
      Set<String> got = new HashSet<>();
      ScanParams params = new ScanParams().match(p + "*").count(7);
      String cursor = ScanParams.SCAN_POINTER_START;
      do {
        ScanResult<String> res = r.scan(cursor, params);
        got.addAll(res.getResult());
        cursor = res.getCursor();
      } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
      out.put("keys", got.size());
      out.put("same", got.equals(want));
    }));
    l.add(new Named<>("counters", (r, o, p, out) -> {
      String n = p + "n", s = p + "s", none = p + "none";
      r.del(n, s, none);
      out.put("incr", r.incr(n));
      out.put("incr_again", r.incr(n));
      out.put("incrby", r.incrBy(n, 10));
      out.put("decr", r.decr(n));
      out.put("get", r.get(n));
      out.put("get_other", o.get(n));
      r.set(s, "abc");
      try {
        out.put("incr_text", r.incr(s));
      } catch (JedisDataException e) {
        out.put("incr_text", "error");
      }
      out.put("decr_missing", r.decr(none));
    }));
    l.add(new Named<>("pipeline", (r, o, p, out) -> {
      String k = p + "k", n = p + "n", h = p + "h", none = p + "none";
      r.del(k, n, h, none);
      Pipeline pl = r.pipelined();
      List<Response<?>> rs = List.of(pl.set(k, "v"), pl.incr(n), pl.incr(n), pl.get(k), pl.hset(h, "f", "x"),
          pl.hget(h, "f"), pl.get(none), pl.del(k));
      pl.sync();
      List<Object> replies = new ArrayList<>();
      for (Response<?> x : rs) replies.add(x.get());
      out.put("replies", replies);
    }));
    return l;
  }

  static Jedis jedis(String addr, RedisProtocol proto) {
    var cfg = DefaultJedisClientConfig.builder().timeoutMillis(20000);
    if (proto != null) cfg.protocol(proto);
    return new Jedis(HostAndPort.from(addr), cfg.build());
  }

  static void runJedis(String addr, String otherAddr, String prefix) {
    Map<String, RedisProtocol> variants = new LinkedHashMap<>();
    variants.put("resp2-default", null); // Jedis speaks RESP2 unless told otherwise
    variants.put("resp3", RedisProtocol.RESP3);
    variants.forEach((variant, proto) -> {
      try (Jedis r = jedis(addr, proto); Jedis o = jedis(otherAddr, proto)) {
        runAll(variant, jedisChecks(), r, o, prefix);
      }
    });
  }

  // ---- Lettuce ----

  static List<Named<Conn>> lettuceChecks() {
    List<Named<Conn>> l = new ArrayList<>();
    l.add(new Named<>("proto", (c, o, p, out) -> out.put("resp", resp(c.r.clientInfo()))));
    l.add(new Named<>("strings", (c, o, p, out) -> {
      RedisCommands<String, String> r = c.r;
      r.del(p + "k1", p + "k2", p + "k3", p + "none");
      out.put("set", r.set(p + "k1", "v1"));
      out.put("get", r.get(p + "k1"));
      out.put("get_other", o.r.get(p + "k1"));
      out.put("get_missing", r.get(p + "none"));
      out.put("mset", r.mset(Map.of(p + "k2", "a", p + "k3", "b")));
      List<Object> got = new ArrayList<>();
      for (KeyValue<String, String> kv : r.mget(p + "k1", p + "k2", p + "k3", p + "none")) got.add(kv.getValueOrElse(null));
      out.put("mget", got);
      out.put("exists", r.exists(p + "k1", p + "k2", p + "none"));
      out.put("del", r.del(p + "k2", p + "none"));
      out.put("exists_after", r.exists(p + "k2"));
    }));
    l.add(new Named<>("set_options", (c, o, p, out) -> {
      RedisCommands<String, String> r = c.r;
      r.del(p + "k", p + "none");
      out.put("nx", r.set(p + "k", "v1", SetArgs.Builder.nx()));
      out.put("nx_again", r.set(p + "k", "v2", SetArgs.Builder.nx()));
      out.put("xx", r.set(p + "k", "v3", SetArgs.Builder.xx()));
      out.put("xx_missing", r.set(p + "none", "x", SetArgs.Builder.xx()));
      out.put("get_option", r.setGet(p + "k", "v4"));
      out.put("value", r.get(p + "k"));
    }));
    l.add(new Named<>("hashes", (c, o, p, out) -> {
      RedisCommands<String, String> r = c.r;
      String h = p + "h";
      r.del(h, p + "none");
      out.put("hset", r.hset(h, Map.of("f1", "v1", "f2", "v2")));
      out.put("hset_update", r.hset(h, "f1", "x"));
      out.put("hget", r.hget(h, "f1"));
      out.put("hget_missing", r.hget(h, "nofield"));
      out.put("hgetall", r.hgetall(h));
      out.put("hlen", r.hlen(h));
      out.put("hdel", r.hdel(h, "f2", "nofield"));
      out.put("hlen_after", r.hlen(h));
      out.put("hgetall_other", o.r.hgetall(h));
      out.put("hgetall_missing", r.hgetall(p + "none"));
    }));
    l.add(new Named<>("ttl", (c, o, p, out) -> {
      RedisCommands<String, String> r = c.r;
      String k = p + "k", px = p + "px", none = p + "none";
      r.del(k, px, none);
      out.put("set_px", r.set(px, "v", SetArgs.Builder.px(2000)));
      long start = System.nanoTime();
      out.put("pttl", within(r.pttl(px), 1, 2000));
      out.put("set", r.set(k, "v"));
      out.put("ttl_none", r.ttl(k));
      out.put("expire", r.expire(k, 100));
      out.put("ttl", within(r.ttl(k), 1, 100));
      out.put("persist", r.persist(k));
      out.put("ttl_persisted", r.ttl(k));
      out.put("persist_again", r.persist(k));
      out.put("set_ex", r.set(k, "v", SetArgs.Builder.ex(50)));
      out.put("ttl_ex", within(r.ttl(k), 1, 50));
      out.put("ttl_missing", r.ttl(none));
      out.put("expire_missing", r.expire(none, 10));
      sleepUntil(start, 2300);
      out.put("expired", r.get(px));
      out.put("ttl_expired", r.ttl(px));
    }));
    l.add(new Named<>("scan", (c, o, p, out) -> {
      RedisCommands<String, String> r = c.r;
      Set<String> want = scanKeys(p);
      r.mset(values(want));
      r.hset(p + "h", "f", "v");
      want.add(p + "h");
      Set<String> got = new HashSet<>();
      ScanIterator<String> it = ScanIterator.scan(r, ScanArgs.Builder.matches(p + "*").limit(7));
      while (it.hasNext()) got.add(it.next());
      out.put("keys", got.size());
      out.put("same", got.equals(want));
    }));
    l.add(new Named<>("counters", (c, o, p, out) -> {
      RedisCommands<String, String> r = c.r;
      String n = p + "n", s = p + "s", none = p + "none";
      r.del(n, s, none);
      out.put("incr", r.incr(n));
      out.put("incr_again", r.incr(n));
      out.put("incrby", r.incrby(n, 10));
      out.put("decr", r.decr(n));
      out.put("get", r.get(n));
      out.put("get_other", o.r.get(n));
      r.set(s, "abc");
      try {
        out.put("incr_text", r.incr(s));
      } catch (io.lettuce.core.RedisCommandExecutionException e) {
        out.put("incr_text", "error");
      }
      out.put("decr_missing", r.decr(none));
    }));
    l.add(new Named<>("pipeline", (c, o, p, out) -> {
      String k = p + "k", n = p + "n", h = p + "h", none = p + "none";
      c.r.del(k, n, h, none);
      // Lettuce pipelines by holding commands back until flushCommands.
      RedisAsyncCommands<String, String> a = c.conn.async();
      c.conn.setAutoFlushCommands(false);
      List<RedisFuture<?>> fs;
      try {
        fs = List.of(a.set(k, "v"), a.incr(n), a.incr(n), a.get(k), a.hset(h, "f", "x"), a.hget(h, "f"),
            a.get(none), a.del(k));
        c.conn.flushCommands();
      } finally {
        c.conn.setAutoFlushCommands(true);
      }
      LettuceFutures.awaitAll(Duration.ofSeconds(20), fs.toArray(new RedisFuture[0]));
      List<Object> replies = new ArrayList<>();
      for (RedisFuture<?> f : fs) replies.add(f.get());
      out.put("replies", replies);
    }));
    return l;
  }

  /** A Lettuce connection and its synchronous commands. */
  record Conn(StatefulRedisConnection<String, String> conn, RedisCommands<String, String> r) {}

  static void runLettuce(String addr, String otherAddr, String prefix) {
    Map<String, ProtocolVersion> variants = new LinkedHashMap<>();
    variants.put("resp3-default", null); // Lettuce sends HELLO 3 unless told otherwise
    variants.put("resp2", ProtocolVersion.RESP2);
    variants.forEach((variant, proto) -> {
      ClientOptions.Builder opts = ClientOptions.builder();
      if (proto != null) opts.protocolVersion(proto);
      var client = io.lettuce.core.RedisClient.create();
      client.setOptions(opts.build());
      try (var c = client.connect(uri(addr)); var o = client.connect(uri(otherAddr))) {
        runAll(variant, lettuceChecks(), new Conn(c, c.sync()), new Conn(o, o.sync()), prefix);
      } finally {
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
      }
    });
  }

  static RedisURI uri(String addr) {
    HostAndPort hp = HostAndPort.from(addr);
    return RedisURI.builder().withHost(hp.getHost()).withPort(hp.getPort()).withTimeout(Duration.ofSeconds(20)).build();
  }

  static <C> void runAll(String variant, List<Named<C>> checks, C r, C other, String prefix) {
    for (Named<C> c : checks) {
      String line;
      try {
        Map<String, Object> out = new LinkedHashMap<>();
        c.body().run(r, other, prefix + ":" + variant + ":" + c.name() + ":", out);
        List<String> parts = new ArrayList<>();
        out.forEach((k, v) -> parts.add(k + "=" + text(v)));
        line = String.join(" ", parts);
      } catch (Exception e) { // each check reports on its own: one failing hides no other
        line = ("ERROR " + e.getClass().getSimpleName() + ": " + e.getMessage()).replace('\n', ' ');
      }
      System.out.println(variant + " " + c.name() + " " + line);
      System.out.flush();
    }
  }

  public static void main(String[] args) {
    switch (args[0]) {
      case "jedis" -> runJedis(args[1], args[2], args[3]);
      case "lettuce" -> runLettuce(args[1], args[2], args[3]);
      default -> throw new IllegalArgumentException("want jedis or lettuce, not " + args[0]);
    }
  }
}
