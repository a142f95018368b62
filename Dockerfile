# The surface store and the project's command-line tools in one image.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md constraints.txt ./
COPY surfacestore ./surfacestore
COPY preprocess ./preprocess
COPY simclient ./simclient
COPY sample_surfaces ./sample_surfaces
# the versions the test suite last passed with (constraints.txt)
RUN pip install --no-cache-dir -c constraints.txt .
ENV SURFACESTORE_ROOT=/tables \
    SURFACESTORE_HOST=0.0.0.0 \
    SURFACESTORE_PORT=8000
EXPOSE 8000
CMD ["surfacestore", "serve"]
