// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// One graph node's device driven from Java through org.nodefl.Device (the
// JNI binding of the C API) over a java.net.Socket: what an Android app's
// connection code does, as a command-line program that takes the board
// client's flags (examples/device-linux, nodefl-device) so that
// tests/examples/device_client_job.sh can run it in a real FedWalk job in
// nodefl-device's place. It reconnects with backoff and resumes, keeps the
// lifetime privacy spend in a ledger file, says Goodbye on SIGTERM, and
// prints the same one-line summary.
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.nodefl.Device;
import org.nodefl.DeviceConfig;
import org.nodefl.DeviceState;
import org.nodefl.DeviceStats;
import org.nodefl.Ledger;
import org.nodefl.NodeflException;

public final class DeviceOverSocket {
  private static final String TOOL = "DeviceOverSocket";
  private static volatile String stopSignal = null;

  // ---- options (nodefl-device's names) ----
  private String host;
  private int port;
  private String serverName = "localhost";
  private int id = -1;
  private String ca, cert, key, neighboursFile, ledgerFile;
  private String job = "neighbour-echo";
  private String fedwalkMode = "strict";
  private int vertices;
  private boolean unlimited;
  private boolean exitWhenDone;
  private int maxAttempts;
  private int backoffMaxMs = 30000;
  private int handshakeTimeoutS = 30;
  private int tickMs = 200;

  // ---- state ----
  private Device device;
  private double spentEpsilon, spentDelta;  // what the ledger file holds
  private String ledgerError;

  private static long nowUs() {
    return System.nanoTime() / 1000;
  }

  private static void usage(String why) {
    System.err.println(TOOL + ": " + why);
    System.err.println("usage: " + TOOL + " --server HOST:PORT --id N --ca FILE --cert FILE --key FILE"
        + " --neighbours FILE [--job JOB] [--fedwalk-mode M] [--vertices N] [--unlimited-budget]"
        + " [--ledger-file FILE] [--exit-when-done] [--max-attempts N] [--backoff-max-ms MS]"
        + " [--server-name NAME] [--handshake-timeout S]");
    System.exit(2);
  }

  private void parse(String[] args) {
    for (int i = 0; i < args.length; ++i) {
      final String flag = args[i];
      final boolean valued = !flag.equals("--unlimited-budget") && !flag.equals("--exit-when-done");
      if (valued && i + 1 >= args.length) usage(flag + " needs a value");
      final String v = valued ? args[++i] : null;
      try {
        switch (flag) {
          case "--server": {
            final int colon = v.lastIndexOf(':');
            if (colon <= 0) usage("--server expects HOST:PORT, got '" + v + "'");
            host = v.substring(0, colon);
            port = Integer.parseInt(v.substring(colon + 1));
            break;
          }
          case "--server-name": serverName = v; break;
          case "--id": id = Integer.parseInt(v); break;
          case "--ca": ca = v; break;
          case "--cert": cert = v; break;
          case "--key": key = v; break;
          case "--neighbours": neighboursFile = v; break;
          case "--job": job = v; break;
          case "--fedwalk-mode": fedwalkMode = v; break;
          case "--vertices": vertices = Integer.parseInt(v); break;
          case "--unlimited-budget": unlimited = true; break;
          case "--ledger-file": ledgerFile = v; break;
          case "--exit-when-done": exitWhenDone = true; break;
          case "--max-attempts": maxAttempts = Integer.parseInt(v); break;
          case "--backoff-max-ms": backoffMaxMs = Math.max(100, Integer.parseInt(v)); break;
          case "--handshake-timeout": handshakeTimeoutS = Integer.parseInt(v); break;
          default: usage("unknown flag " + flag);
        }
      } catch (NumberFormatException e) {
        usage(flag + " expects a number, got '" + v + "'");
      }
    }
    if (host == null) usage("--server is required");
    if (id < 0) usage("--id is required");
    if (ca == null || cert == null || key == null) usage("--ca, --cert and --key are required");
    if (neighboursFile == null) usage("--neighbours is required");
  }

  // Neighbour ids: white space or commas, '#' comments (as nodefl-device reads them).
  private static int[] readNeighbours(String path) throws IOException {
    final List<Integer> ids = new ArrayList<>();
    for (String line : Files.readAllLines(Paths.get(path), StandardCharsets.UTF_8)) {
      final int hash = line.indexOf('#');
      if (hash >= 0) line = line.substring(0, hash);
      for (String token : line.split("[\\s,]+")) {
        if (!token.isEmpty()) ids.add(Integer.parseInt(token));
      }
    }
    return ids.stream().mapToInt(Integer::intValue).toArray();
  }

  // The ledger file: "lifetime_epsilon E" and "lifetime_delta D" lines (nodefl-device's format).
  private void readLedger() throws IOException {
    final Path path = Paths.get(ledgerFile);
    if (!Files.exists(path)) return;  // the device's first life
    for (String line : Files.readAllLines(path, StandardCharsets.UTF_8)) {
      final String[] kv = line.trim().split("\\s+");
      if (kv.length != 2) continue;
      if (kv[0].equals("lifetime_epsilon")) spentEpsilon = Double.parseDouble(kv[1]);
      if (kv[0].equals("lifetime_delta")) spentDelta = Double.parseDouble(kv[1]);
    }
  }

  // Persists the lifetime spend when it grew; false when the file cannot be written.
  private boolean persistLedger() {
    if (ledgerFile == null) return true;
    final Ledger ledger = device.ledger();
    if (ledger.lifetimeEpsilon == spentEpsilon && ledger.lifetimeDelta == spentDelta) return true;
    try {
      final Path path = Paths.get(ledgerFile);
      final Path tmp = Paths.get(ledgerFile + ".tmp");
      Files.write(tmp, ("lifetime_epsilon " + ledger.lifetimeEpsilon + "\nlifetime_delta " + ledger.lifetimeDelta
          + "\n").getBytes(StandardCharsets.UTF_8));
      Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      spentEpsilon = ledger.lifetimeEpsilon;
      spentDelta = ledger.lifetimeDelta;
      return true;
    } catch (IOException e) {
      ledgerError = e.toString();
      return false;
    }
  }

  private enum End { CLOSED, LOST, FAILED }

  // One TCP connection: the main loop of nodefl.h over a blocking socket
  // whose reads time out every tick.
  private final class Connection {
    final Socket socket;
    final byte[] in = new byte[4096];
    int inBegin, inEnd;  // received, not yet taken
    boolean closing, opened;
    String detail = "";

    Connection(Socket socket) {
      this.socket = socket;
    }

    End run() throws IOException {
      final InputStream input = socket.getInputStream();
      final OutputStream output = socket.getOutputStream();
      try {
        device.connect(nowUs());
      } catch (NodeflException e) {
        detail = e.getMessage();
        return End.FAILED;
      }
      while (true) {
        step();
        if (!writeOut(output)) return End.LOST;
        final DeviceState state = device.state();
        if (state == DeviceState.FAILED) {
          detail = device.lastError();
          return End.FAILED;
        }
        if (state == DeviceState.CLOSED && device.pendingOutput().length == 0) {
          detail = "closed";
          return End.CLOSED;
        }
        if (!closing && (stopSignal != null || (exitWhenDone && device.finished()) || ledgerError != null)) {
          close(ledgerError != null ? "ledger file unwritable" : "device closing");
        }
        if (inBegin < inEnd) continue;  // bytes still to feed: no waiting
        try {
          final int n = input.read(in);
          if (n < 0) {
            detail = "the server closed the TCP connection";
            return End.LOST;
          }
          inBegin = 0;
          inEnd = n;
        } catch (SocketTimeoutException e) {
          // the tick
        } catch (IOException e) {
          detail = "read: " + e.getMessage();
          return End.LOST;
        }
      }
    }

    // Feeds held input, ticks, then hands results between the job's stages
    // (inside the C API) and persists the ledger before output is written.
    void step() {
      final DeviceState state = device.state();
      try {
        if (inBegin < inEnd && state != DeviceState.FAILED && state != DeviceState.CLOSED) {
          inBegin += device.receive(in, inBegin, inEnd - inBegin, nowUs());
        }
        final DeviceState now = device.state();
        if (now == DeviceState.HANDSHAKING || now == DeviceState.OPEN || now == DeviceState.CLOSING) {
          device.tick(nowUs());
        }
      } catch (NodeflException e) {
        // The state says FAILED (or the roles closed the session); run() reports it.
      }
      if (!opened && (device.state() == DeviceState.OPEN)) {
        opened = true;
        System.err.println(TOOL + ": device " + id + " connected to " + host + ":" + port + " (connection "
            + device.stats().connections + ")");
      }
      persistLedger();
    }

    void close(String reason) {
      final DeviceState state = device.state();
      if (state != DeviceState.OPEN && state != DeviceState.HANDSHAKING) return;
      try {
        device.closeSession(reason);
        closing = true;
      } catch (NodeflException e) {
        // AGAIN: the Goodbye did not fit yet; asked again after the next write.
      }
    }

    boolean writeOut(OutputStream output) {
      while (true) {
        final byte[] out = device.pendingOutput();
        if (out.length == 0) return true;
        try {
          output.write(out);
          output.flush();
        } catch (IOException e) {
          detail = "write: " + e.getMessage();
          return false;
        }
        try {
          device.consumeOutput(out.length, nowUs());
        } catch (NodeflException e) {
          if (device.state() != DeviceState.FAILED) return true;
          // FAILED: an alert may still be pending; the loop writes it.
        }
        persistLedger();
      }
    }
  }

  private int run(String[] args) throws Exception {
    parse(args);
    final int[] neighbours = readNeighbours(neighboursFile);
    if (ledgerFile != null) readLedger();
    final DeviceConfig.Builder builder = DeviceConfig.builder()
        .deviceId(id)
        .neighbours(neighbours)
        .job(job)
        .fedwalkMode(fedwalkMode)
        .vertices(vertices)
        .serverName(serverName)
        .lifetimeSpent(spentEpsilon, spentDelta)
        .handshakeTimeoutMs(handshakeTimeoutS * 1000)
        .credentials(Files.readAllBytes(Paths.get(ca)), Files.readAllBytes(Paths.get(cert)),
            Files.readAllBytes(Paths.get(key)));
    if (unlimited) builder.unlimitedBudget();
    final DeviceConfig config = builder.build();
    try {
      device = Device.create(config);
    } catch (NodeflException e) {
      System.err.println(TOOL + ": cannot create the device: " + e.getMessage() + " (status " + e.status() + ")");
      return 1;
    } finally {
      config.wipeKey();
    }
    try (Device owned = device) {
      return loop();
    }
  }

  private int loop() throws InterruptedException {
    final Random jitter = new Random(id ^ System.nanoTime());
    int connections = 0, failuresInARow = 0, exit = 0;
    String end;
    while (true) {
      String error;
      End outcome = End.LOST;
      boolean opened = false;
      try (Socket socket = new Socket()) {
        socket.connect(new InetSocketAddress(host, port), 10000);
        socket.setTcpNoDelay(true);
        socket.setSoTimeout(tickMs);
        ++connections;
        final Connection c = new Connection(socket);
        outcome = c.run();
        opened = c.opened;
        error = c.detail;
      } catch (IOException e) {
        error = e.getMessage();
      }
      if (ledgerError != null) {
        System.err.println(TOOL + ": privacy ledger file: " + ledgerError);
        end = "ledger file unwritable";
        exit = 1;
        break;
      }
      if (stopSignal != null) {
        end = stopSignal;
        break;
      }
      if (exitWhenDone && device.finished()) {
        end = "job done";
        break;
      }
      if (device.sessionEnded()) {
        end = "session closed by the server: " + error;
        if (!device.finished()) {
          System.err.println(TOOL + ": " + end);
          exit = 1;
        }
        break;
      }
      if (device.lastError().startsWith("roles:")) {
        System.err.println(TOOL + ": " + device.lastError());
        end = "roles failed";
        exit = 1;
        break;
      }
      failuresInARow = opened ? 0 : failuresInARow + 1;
      if (maxAttempts != 0 && failuresInARow >= maxAttempts) {
        System.err.println(TOOL + ": gave up after " + failuresInARow + " failed connections: " + error);
        end = "gave up connecting";
        exit = 1;
        break;
      }
      // Exponential backoff with jitter: 100 ms doubling to --backoff-max-ms.
      final int ceiling = Math.min(backoffMaxMs, 100 << Math.min(failuresInARow, 16));
      final int waitMs = ceiling / 2 + jitter.nextInt(ceiling / 2 + 1);
      System.err.println(TOOL + ": device " + id + ": connection ended (" + error + "); reconnecting in " + waitMs
          + " ms");
      for (int waited = 0; waited < waitMs && stopSignal == null; waited += 50) Thread.sleep(50);
      if (stopSignal != null) {
        end = stopSignal;
        break;
      }
    }
    persistLedger();
    final DeviceStats s = device.stats();
    final Ledger ledger = device.ledger();
    System.out.println("device=" + id + " job=" + job + " finished=" + (device.finished() ? 1 : 0) + " end=\"" + end
        + "\" connections=" + connections + " reconnects=" + Math.max(0, connections - 1)
        + " walks_forwarded=" + s.walksForwarded + " walks_finished=" + s.walksFinished
        + " walks_dropped=" + s.walksDropped + " hct_reports=" + s.hctReports + " epsilon=" + ledger.epsilon
        + " lifetime_epsilon=" + ledger.lifetimeEpsilon + " arena_bytes=" + s.arenaBytes + " runtime=java-jni");
    return exit;
  }

  // SIGTERM and SIGINT close the session with Goodbye instead of killing
  // the JVM (sun.misc.Signal, in jdk.unsupported; an Android app has its
  // own lifecycle instead).
  @SuppressWarnings("restriction")
  private static void onStopSignals() {
    for (String name : new String[] {"TERM", "INT"}) {
      sun.misc.Signal.handle(new sun.misc.Signal(name), signal -> stopSignal = "SIG" + signal.getName());
    }
  }

  public static void main(String[] args) throws Exception {
    onStopSignals();
    System.exit(new DeviceOverSocket().run(args));
  }
}
