#!/usr/bin/env python3
"""Paint table: every finger draws its own stroke; undo, clear (pygame)."""
import time

import common  # sets up pygame's environment before pygame is imported
import pygame

PAPER = (250, 250, 250)
INK = (0, 188, 212)
WIDTH = 20


class Painting:
    def __init__(self, screen):
        self.screen = screen
        self.w, self.h = screen.get_size()
        self.canvas = pygame.Surface((self.w, self.h))
        self.canvas.fill(PAPER)
        self.strokes = []      # finished strokes: (colour, width, points)
        self.active = {}       # finger id -> points
        self.dirty = [self.canvas.get_rect()]

    def _dot(self, p, colour=INK, width=WIDTH):
        return pygame.draw.circle(self.canvas, colour, p, width // 2)

    def _segment(self, a, b, colour=INK, width=WIDTH):
        r = pygame.draw.line(self.canvas, colour, a, b, width)
        return r.union(self._dot(b, colour, width))   # round joins and caps

    def down(self, finger, p):
        self.active[finger] = [p]
        self.dirty.append(self._dot(p))

    def move(self, finger, p):
        pts = self.active.get(finger)
        if pts is None:
            return
        self.dirty.append(self._segment(pts[-1], p))
        pts.append(p)

    def up(self, finger):
        pts = self.active.pop(finger, None)
        if pts:
            self.strokes.append((INK, WIDTH, pts))

    def undo(self):
        if not self.strokes:
            return False
        self.strokes.pop()
        self.canvas.fill(PAPER)
        for colour, width, pts in self.strokes:
            self._dot(pts[0], colour, width)
            for a, b in zip(pts, pts[1:]):
                self._segment(a, b, colour, width)
        self.dirty = [self.canvas.get_rect()]
        return True

    def handle(self, event):
        if event.type == pygame.FINGERDOWN:
            self.down(event.finger_id, (int(event.x * self.w), int(event.y * self.h)))
        elif event.type == pygame.FINGERMOTION:
            self.move(event.finger_id, (int(event.x * self.w), int(event.y * self.h)))
        elif event.type == pygame.FINGERUP:
            self.up(event.finger_id)
        elif event.type == pygame.KEYDOWN and event.key == pygame.K_u:
            self.undo()

    def present(self):
        if not self.dirty:
            return
        for r in self.dirty:
            self.screen.blit(self.canvas, r, r)
        pygame.display.update(self.dirty)
        self.dirty = []

    def add_stroke(self, pts):
        self.down(0, pts[0])
        for p in pts[1:]:
            self.move(0, p)
        self.up(0)


def run(painting, seconds=None):
    start = time.monotonic()
    painting.present()
    while seconds is None or time.monotonic() - start < seconds:
        event = pygame.event.wait(100)
        while event.type != pygame.NOEVENT:
            if event.type == pygame.QUIT:
                return
            painting.handle(event)
            event = pygame.event.poll()
        painting.present()


def finger(kind, x, y, w, h):
    return pygame.event.Event(kind, touch_id=1, finger_id=0, x=x / w, y=y / h, dx=0.0, dy=0.0, pressure=1.0)


def main():
    args = common.parse(__doc__)
    screen = common.open_screen(args)
    painting = Painting(screen)
    w, h = args.width, args.height
    if args.first_frame:
        painting.present()
        common.first_frame()
        for i in range(200):
            painting.add_stroke(common.stroke_points(i, w, h))
            painting.present()
        common.report_peak_rss()
        return
    if args.bench:
        out = {"scene": "paint", "size": [w, h], "segment_ms": {}}
        i = 0
        for n in args.stroke_counts:
            while len(painting.strokes) < n:
                painting.add_stroke(common.stroke_points(i, w, h))
                i += 1
            painting.present()
            # One long stroke in progress: each sample adds one segment and presents it.
            seg = []
            painting.down(0, (w // 4, h // 2))
            for k in range(args.bench):
                x = w // 4 + (k * 7) % (w // 2)
                y = h // 2 + ((k * 13) % 200) - 100
                seg.append(common.timed(lambda: (painting.move(0, (x, y)), painting.present())))
            painting.active.clear()
            out["segment_ms"][str(n)] = seg
        # Undo (and draw it) with 1 000 finished strokes.
        while len(painting.strokes) > 1000:
            painting.strokes.pop()
        undo = []
        for k in range(min(args.bench, 50)):
            pts = common.stroke_points(20000 + k, w, h)
            painting.add_stroke(pts)
            painting.present()
            undo.append(common.timed(lambda: (painting.undo(), painting.present())))
        out["undo_ms"] = undo
        # Touch to flip request: an event posted to the queue until the display update is asked for.
        lat = []
        painting.handle(finger(pygame.FINGERDOWN, w // 3, h // 2, w, h))
        painting.present()
        for k in range(args.bench):
            x = w // 3 + (k * 5) % (w // 3)
            t0 = time.perf_counter()
            pygame.event.post(finger(pygame.FINGERMOTION, x, h // 2 + (k % 50), w, h))
            for event in pygame.event.get():
                painting.handle(event)
            painting.present()
            lat.append((time.perf_counter() - t0) * 1000)
        out["touch_to_flip_ms"] = lat
        common.emit(out)
        return
    if args.idle:
        meter = common.IdleMeter()
        run(painting, args.idle)
        meter.report("paint")
        return
    run(painting)


if __name__ == "__main__":
    main()
