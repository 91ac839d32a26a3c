# casket as an image: `docker build -t casket .`, then
#   docker run -p 9000:9000 -v casket-data:/data casket
# prints the generated admin key on first start (its secret that once; it is
# kept in /data/credentials.json). Every flag has a CASKET_* variable.

# Build stage: the TypeScript compiler and the dev dependencies stay here.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the prepare script would build before the sources are copied.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY scripts/finish-build.mjs ./scripts/
RUN npx tsc -p tsconfig.build.json && node scripts/finish-build.mjs

# Run stage: production dependencies and the built code only.
FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# Node 24's node:sqlite serves casket (Node 22's cuts text at U+0000: src/sqlite.ts),
# so the optional better-sqlite3 is left out, and with it the only install
# script: nothing is compiled here.
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force \
 && mkdir /data \
 && chown node:node /data
COPY --from=build /app/dist ./dist
# glibc keeps up to 16 MiB of freed heap instead of handing it back and
# faulting it in again for the next body (README, Performance: an 8 MiB
# GetObject through casket took 500-1,000 page faults and 24-71 ms of CPU
# without, 3 and ~12 ms with); npm start sets the same.
ENV CASKET_LISTEN=0.0.0.0:9000 \
    CASKET_DATA_DIR=/data \
    GLIBC_TUNABLES=glibc.malloc.trim_threshold=16777216
VOLUME ["/data"]
EXPOSE 9000
# The official image's unprivileged user: casket needs no root.
USER node
# Ready, not merely alive: the backend and the state store answer (/_casket/ready).
HEALTHCHECK --interval=10s --timeout=8s --start-period=20s --retries=3 \
  CMD ["node", "-e", "const port = (process.env.CASKET_LISTEN || '').split(':').pop() || '9000'; fetch(`http://127.0.0.1:${port}/_casket/ready`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node is PID 1: casket handles SIGTERM itself (drains, then exits), so docker stop is clean.
# --initial-old-space-size: V8 keeps casket's old generation sized for work
# after an idle spell (README, Performance), as npm start does.
ENTRYPOINT ["node", "--initial-old-space-size=64", "dist/cli.js"]
