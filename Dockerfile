# syntax=docker/dockerfile:1
# Build stage: full dependencies, compile TypeScript.
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Install scripts off in both stages: the build is tsc, which needs none, and mongodb-memory-server's
# postinstall would fetch a mongod that the image never runs.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY config ./config
COPY src ./src
COPY jobs ./jobs
COPY workers ./workers
RUN npm run build

# Runtime stage: production dependencies and the compiled program only, as a non-root user.
FROM node:22-bookworm-slim AS runtime
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
# The account page (/app): static files, found from dist/src/app/http/routes/ as ../../../../../web/app.
COPY web ./web
USER node
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.METRICS_PORT||process.env.PORT||3000)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# Node runs as PID 1 directly (no npm wrapper) so SIGTERM reaches the program's shutdown handler.
ENTRYPOINT ["node", "dist/src/app/cli/main.js"]
CMD ["api"]
