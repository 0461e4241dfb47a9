// Plays an asciicast file in asciinema-player's own core (its parser and its recording driver, no DOM):
// prints one JSON line with what the player dispatched (output text, markers, resizes, whether it ended).
// Run by tests/history/asciinema_player.py: node asciinema_play.mjs PLAYER_PACKAGE_DIR CAST_FILE
import { readFileSync, readdirSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [playerDir, castPath] = process.argv.slice(2);
const dist = join(playerDir, "dist");
const coreFile = readdirSync(dist).find((n) => n.startsWith("core-") && n.endsWith(".js"));
const { C: Core } = await import(pathToFileURL(join(dist, coreFile)).href);
let raw = readFileSync(castPath);
if (castPath.endsWith(".gz")) raw = gunzipSync(raw);
const text = raw.toString("utf-8");
const seen = { output: "", markers: [], resizes: [], ended: false, errors: [] };
const logger = { debug() {}, info() {}, warn: (...a) => seen.errors.push(a.join(" ")), error: (...a) => seen.errors.push(a.join(" ")) };
const core = new Core({ driver: "recording", data: text }, {
  logger, speed: 1000, autoPlay: true, idleTimeLimit: 0.01, preload: true, loop: false, markers: undefined, pauseOnMarkers: false,
});
core.addEventListener("output", (d) => { seen.output += Array.isArray(d) ? d.join("") : d; });  // a group of events is an array
core.addEventListener("marker", (m) => { seen.markers.push(m.label ?? m); });
core.addEventListener("resize", (r) => { seen.resizes.push([r.cols, r.rows]); });
core.addEventListener("metadata", (m) => { seen.cols = m.size?.cols; seen.rows = m.size?.rows; seen.markersMeta = (m.markers || []).map((x) => x[1]); seen.duration = m.duration; });
const ended = new Promise((resolve) => core.addEventListener("ended", () => { seen.ended = true; resolve(); }));
core.terminalReady();
try {
  await core.init();
  await Promise.race([ended, new Promise((r) => setTimeout(r, 20000))]);
} catch (e) {
  seen.errors.push(String(e && e.stack || e));
}
process.stdout.write(JSON.stringify(seen) + "\n");
process.exit(0);
