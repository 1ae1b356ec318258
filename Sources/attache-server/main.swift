import AttacheServer
print(AttacheServerInfo.name)
